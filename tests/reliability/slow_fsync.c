/* A slow disk for a redis-server of a test's own, loaded with LD_PRELOAD. Built by
 * tests/reliability/slow_disk.py. The file named by SLOW_FSYNC_FILE (read at each call, so a
 * test can change the disk while Redis runs; no file: a fast disk) holds
 *
 * - a number N: every fsync() and fdatasync() of the process waits N ms before the real call,
 *   as a busy disk does;
 * - "hold": a disk that does not answer. An fsync waits until the file says something else,
 *   after creating SLOW_FSYNC_FILE.fsync-held; while it waits, a write() to a regular file (the
 *   append-only file) waits too, after appending its bytes to SLOW_FSYNC_FILE.held and creating
 *   SLOW_FSYNC_FILE.write-held. What a process killed meanwhile had not written is then known
 *   exactly: the bytes of the held write (and whatever it still held in memory).
 *
 * Writes to sockets and pipes (replies, logs) are never held. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HOLD -1L

static int fsyncs_held; /* fsyncs waiting in hold mode (any thread) */
static __thread int in_hook; /* this thread is inside our write(): pass its own writes through */

static ssize_t (*real_write)(int, const void *, size_t);

static long disk_setting(void) {
    const char *path = getenv("SLOW_FSYNC_FILE");
    FILE *f = path ? fopen(path, "r") : 0;
    char word[32] = "";
    if (!f) return 0;
    if (fscanf(f, "%31s", word) != 1) word[0] = 0;
    fclose(f);
    if (strcmp(word, "hold") == 0) return HOLD;
    return strtol(word, 0, 10);
}

static void pause_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, 0);
}

/* SLOW_FSYNC_FILE + suffix, opened with flags (the held bytes are appended with write). */
static int open_beside(const char *suffix, int flags) {
    const char *path = getenv("SLOW_FSYNC_FILE");
    char name[PATH_MAX];
    if (!path || snprintf(name, sizeof name, "%s%s", path, suffix) >= (int)sizeof name) return -1;
    return open(name, flags | O_CLOEXEC, 0644);
}

static void signal_beside(const char *suffix) {
    int fd = open_beside(suffix, O_WRONLY | O_CREAT);
    if (fd >= 0) close(fd);
}

static void hold_while_told(void) {
    while (disk_setting() == HOLD) pause_ms(5);
}

static void wait_for_the_disk(void) {
    long ms = disk_setting();
    if (ms == HOLD) {
        __atomic_add_fetch(&fsyncs_held, 1, __ATOMIC_SEQ_CST);
        signal_beside(".fsync-held");
        hold_while_told();
        __atomic_sub_fetch(&fsyncs_held, 1, __ATOMIC_SEQ_CST);
    } else if (ms > 0) {
        pause_ms(ms);
    }
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    wait_for_the_disk();
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    wait_for_the_disk();
    return real(fd);
}

ssize_t write(int fd, const void *buf, size_t n) {
    if (!real_write) real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    struct stat st;
    if (!in_hook && __atomic_load_n(&fsyncs_held, __ATOMIC_SEQ_CST) > 0 && fstat(fd, &st) == 0 &&
        S_ISREG(st.st_mode)) {
        in_hook = 1;
        int out = open_beside(".held", O_WRONLY | O_CREAT | O_APPEND);
        if (out >= 0) {
            size_t done = 0;
            while (done < n) {
                ssize_t w = real_write(out, (const char *)buf + done, n - done);
                if (w <= 0) break;
                done += (size_t)w;
            }
            close(out);
        }
        signal_beside(".write-held");
        hold_while_told();
        in_hook = 0;
    }
    return real_write(fd, buf, n);
}
