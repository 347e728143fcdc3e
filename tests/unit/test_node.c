/* test_node - the node's share of staging without CUDA (src/stage/node.c,
 * nodeseg.c): the policy, the GPU's key, and two processes in one file in a
 * temporary folder: counted together, the one killed by SIGKILL no longer
 * counted (its lock is gone, its stamp still recent), the file removed by
 * the last one out.  tests/stage/node.sh has the rest, on the simulated
 * device. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "stage/node.h"
#include "util/stats.h"
#include "../tap.h"

static void test_policy(void)
{
    static const struct {
        struct pc_node_budget b;
        struct pc_node_count c;
        unsigned threads, chunks;
    } rows[] = {
        { { 16, 16, 16, 16 }, { 1, 1 }, 16, 16 },   /* alone: as before */
        { { 16, 16, 16, 16 }, { 4, 4 }, 4, 4 },     /* four ranks, one GPU, 16 CPUs */
        { { 16, 16, 16, 16 }, { 1, 4 }, 4, 16 },    /* four GPUs, 16 CPUs: the CPUs are the node's */
        { { 16, 16, 64, 16 }, { 1, 4 }, 16, 16 },   /* four GPUs, 64 CPUs */
        { { 4, 16, 16, 16 }, { 2, 2 }, 4, 8 },      /* never more than alone */
        { { 8, 8, 8, 16 }, { 3, 3 }, 2, 5 },
        { { 16, 16, 16, 16 }, { 64, 64 }, 1, 2 },   /* at least a thread and two chunks */
        { { 16, 16, 16, 2 }, { 8, 8 }, 2, 2 },
        { { 16, 16, 16, 16 }, { 0, 0 }, 16, 16 },   /* a count of 0 is 1 */
    };
    unsigned bad = 0;

    for (unsigned i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct pc_node_share s = pc_node_policy(&rows[i].b, rows[i].c);
        if (s.threads != rows[i].threads || s.chunks != rows[i].chunks) {
            diag("row %u: %u threads, %u chunks; want %u, %u", i, s.threads, s.chunks, rows[i].threads,
                 rows[i].chunks);
            bad++;
        }
    }
    ok(bad == 0, "policy: min(alone, gpu / its ranks, cpus / all ranks) >= 1; chunks / its ranks >= 2");
}

static void test_gpu_key(void)
{
    uint64_t k = pc_node_gpu_key("0000:3B:00.0");

    ok(k != 0, "gpu key: 0000:3B:00.0 parses");
    ok(pc_node_gpu_key("0000:3b:00.0") == k && pc_node_gpu_key("00000000:3B:00.0") == k,
       "gpu key: either case, a 4- or 8-digit domain");
    ok(pc_node_gpu_key("0000:3C:00.0") != k && pc_node_gpu_key("0000:3B:00.1") != k &&
       pc_node_gpu_key("0001:3B:00.0") != k, "gpu key: another bus, function or domain differs");
    ok(!pc_node_gpu_key(NULL) && !pc_node_gpu_key("") && !pc_node_gpu_key("GPU-1234") &&
       !pc_node_gpu_key("0000:3B:00") && !pc_node_gpu_key("0000:3B:00.0 ") &&
       !pc_node_gpu_key("0000:1FF:00.0") && !pc_node_gpu_key("0000:3B:20.0") &&
       !pc_node_gpu_key("0000:3B:00.8") && !pc_node_gpu_key("123456789:3B:00.0"),
       "gpu key: anything else is 0 (unknown)");
}

static uint64_t now_ns(void)
{
    return pc_now_ns();
}

static void test_two_processes(void)
{
    char dir[] = "/tmp/pcnodeXXXXXX", path[256];
    struct pc_node_count c;
    struct stat st;
    int go[2], ready[2];
    pid_t kid;
    char b;
    int r;

    if (!mkdtemp(dir) || pipe(go) || pipe(ready)) {
        ok(0, "a temporary folder and pipes");
        return;
    }
    snprintf(path, sizeof path, "%s/pincache-node-v1-%u", dir, (unsigned)geteuid());
    kid = fork();
    if (kid == 0) {
        /* The other rank: joins, stages once, then waits to be killed. */
        if (pc_node_join(dir) != PC_NODE_JOINED)
            _exit(1);
        pc_node_tick(now_ns(), pc_node_gpu_key("0000:3B:00.0"), &c);
        if (write(ready[1], "r", 1) != 1)
            _exit(1);
        if (read(go[0], &b, 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    ok(kid > 0 && read(ready[0], &b, 1) == 1, "the other rank joined and staged");
    ok(pc_node_join(dir) == PC_NODE_JOINED, "this rank joined the same file");
    ok(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600 && st.st_uid == geteuid(),
       "the file: ours, mode 0600");
    r = pc_node_tick(now_ns(), pc_node_gpu_key("0000:3B:00.0"), &c);
    ok(r == 1 && c.gpu == 2 && c.node == 2, "counted: two ranks on the GPU (%u), two on the node (%u)", c.gpu,
       c.node);
    r = pc_node_tick(now_ns(), pc_node_gpu_key("0000:3B:00.0"), &c);
    ok(r == 0 && c.gpu == 2, "at once again: the last count, no new one (%d)", r);
    r = pc_node_tick(now_ns(), pc_node_gpu_key("0000:3C:00.0"), &c);
    ok(r == 1 && c.gpu == 1 && c.node == 2, "on another GPU: alone on it (%u), two on the node (%u)", c.gpu,
       c.node);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    {
        /* Its stamp is still recent; only its lock says it is gone.  The
         * generation did not move: the count comes with the recount. */
        struct timespec t = { 0, (long)PC_NODE_RECOUNT_NS + 10000000 };
        nanosleep(&t, NULL);
    }
    r = pc_node_tick(now_ns(), pc_node_gpu_key("0000:3C:00.0"), &c);
    ok(r == 1 && c.node == 1, "the killed rank is no longer counted (%u on the node)", c.node);
    pc_node_leave();
    ok(stat(path, &st) != 0, "the last one out removed the file");
    ok(pc_node_join(dir) == PC_NODE_LEFT && pc_node_tick(now_ns(), 0, &c) == -1,
       "after leaving: no joining again, no counting");
    rmdir(dir);
}

int main(void)
{
    test_policy();
    test_gpu_key();
    test_two_processes();
    return done_testing();
}
