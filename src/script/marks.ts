/**
 * The member that marks a sorted set as read holds of ours (scored 0, below every deadline): a
 * sorted set without it is someone else's, and no operation reads or writes it as read holds.
 * Not a lock value (those are hex), so never a reader's.
 */
export const READ_HOLDS_MARK = 'redlock-quorum:read-holds';
