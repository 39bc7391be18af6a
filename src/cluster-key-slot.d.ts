/** cluster-key-slot ships no types: the hash slot (0–16383) Redis Cluster assigns to a key, hash tags honoured. */
declare module 'cluster-key-slot' {
  function calculateSlot(key: string | Buffer): number;
  export = calculateSlot;
}
