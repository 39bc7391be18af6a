/*
 * A master's wall clock, moved: an LD_PRELOAD shim for redis-server (src/testing/clock.ts builds it with
 * gcc and writes its control file). CLOCK_REALTIME (and its coarse form) and gettimeofday answer
 *
 *   real + offset + (real - anchor) * drift
 *
 * where the control file ($RQ_CLOCK_FILE) holds "<offset ms> <drift, e.g. 0.001> <anchor ms>".
 * The monotonic clocks are left alone. Nothing here allocates (libfaketime's malloc at start
 * recursed into jemalloc, which reads the clock): the real clock is the raw syscall, the file is
 * read with open/read into a stack buffer, at most every 5 ms of monotonic time.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long offset_ns = 0;
static double drift = 0;
static long long anchor_ns = 0;
static long long next_read_ns = 0;

static int real_clock(clockid_t clock, struct timespec *ts) {
  return (int)syscall(SYS_clock_gettime, clock, ts);
}

static long long ns_of(const struct timespec *ts) {
  return (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

/* "<offset ms> <drift> <anchor ms>", parsed without locale or allocation. */
static void parse(const char *text) {
  char *end;
  double offset_ms = strtod(text, &end);
  double rate = strtod(end, &end);
  double anchor_ms = strtod(end, &end);
  offset_ns = (long long)(offset_ms * 1e6);
  drift = rate;
  anchor_ns = (long long)(anchor_ms * 1e6);
}

static void refresh(void) {
  struct timespec now;
  if (real_clock(CLOCK_MONOTONIC, &now) != 0) return;
  long long mono = ns_of(&now);
  if (mono < next_read_ns) return;
  next_read_ns = mono + 5000000LL;
  const char *path = getenv("RQ_CLOCK_FILE");
  if (!path) return;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buffer[128];
  ssize_t length = read(fd, buffer, sizeof buffer - 1);
  close(fd);
  if (length <= 0) return;
  buffer[length] = '\0';
  parse(buffer);
}

static void moved(struct timespec *ts) {
  refresh();
  long long real = ns_of(ts);
  long long faked = real + offset_ns + (long long)((double)(real - anchor_ns) * drift);
  ts->tv_sec = faked / 1000000000LL;
  ts->tv_nsec = faked % 1000000000LL;
  if (ts->tv_nsec < 0) {
    ts->tv_nsec += 1000000000LL;
    ts->tv_sec -= 1;
  }
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
  int result = real_clock(clock, ts);
  if (result == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) moved(ts);
  return result;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
  (void)tz;
  struct timespec ts;
  int result = clock_gettime(CLOCK_REALTIME, &ts);
  if (result == 0) {
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
  }
  return result;
}

time_t time(time_t *out) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}
