/* A slow disk for a redis-server of a test's own: loaded with LD_PRELOAD, it makes every
 * fsync() and fdatasync() of the process wait the number of milliseconds written in the file
 * named by SLOW_FSYNC_FILE (read at each call, so a test can slow the disk down and speed it
 * up again; no file: no wait) before the real call, as a busy disk does. Built by
 * tests/reliability/slow_disk.py. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void wait_for_the_disk(void) {
    const char *path = getenv("SLOW_FSYNC_FILE");
    FILE *f = path ? fopen(path, "r") : 0;
    long ms = 0;
    if (!f) return;
    if (fscanf(f, "%ld", &ms) != 1) ms = 0;
    fclose(f);
    if (ms > 0) {
        struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&t, 0);
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
