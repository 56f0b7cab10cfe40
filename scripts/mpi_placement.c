/* Ping-pong over raw MPI with the two buffers placed at chosen byte offsets past a page
 * boundary: how much a single-copy read (Open MPI's vader CMA) depends on where the
 * source and destination sit (docs/performance.md, "Buffers that sit alike").
 *
 *   mpicc -O2 -o /tmp/mpi_placement scripts/mpi_placement.c
 *   mpirun -np 2 /tmp/mpi_placement BYTES ITERS SRC_OFFSET DST_OFFSET [header]
 *
 * Prints the one-way time and the median time of the receiver's MPI_Irecv call (which
 * does the read when the message is already announced). With `header`, each message is
 * a 128-byte header message followed by the payload, received in turn, as dist's MPI
 * backend sends them. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

static int cmp(const void *a, const void *b) {
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

static void wait_test(MPI_Request *r) {
    int f = 0;
    while (!f) MPI_Test(r, &f, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (argc < 5) {
        if (me == 0) fprintf(stderr, "usage: BYTES ITERS SRC_OFFSET DST_OFFSET [header]\n");
        MPI_Finalize();
        return 2;
    }
    size_t n = (size_t)atoll(argv[1]);
    int iters = atoi(argv[2]);
    size_t so = (size_t)atoll(argv[3]), ro = (size_t)atoll(argv[4]);
    int header = argc > 5 && strcmp(argv[5], "header") == 0;
    char *sb = (char *)aligned_alloc(4096, n + 8192) + so, *rb = (char *)aligned_alloc(4096, n + 8192) + ro;
    char hs[128], hr[4096 + 128];
    memset(sb, 1, n);
    memset(rb, 0, n);
    memset(hs, 0, sizeof hs);
    unsigned long long *rd = malloc(sizeof *rd * (size_t)iters);
    int peer = 1 - me, nrd = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        for (int turn = 0; turn < 2; turn++) {
            if (turn == me) {
                MPI_Request r[2];
                int k = 0;
                if (header) MPI_Isend(hs, sizeof hs, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &r[k++]);
                MPI_Isend(sb, (int)n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &r[k++]);
                for (int j = 0; j < k; j++) wait_test(&r[j]);
            } else {
                MPI_Request r;
                if (header) {
                    MPI_Irecv(hr, sizeof hr, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &r);
                    wait_test(&r);
                }
                unsigned long long a = __rdtsc();
                MPI_Irecv(rb, (int)n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &r);
                if (me == 0 || me == 1) rd[nrd++ % iters] = __rdtsc() - a;
                wait_test(&r);
            }
        }
    }
    double us = (MPI_Wtime() - t0) / iters / 2 * 1e6;
    qsort(rd, (size_t)(nrd < iters ? nrd : iters), sizeof *rd, cmp);
    if (me == 0)
        printf("%zu bytes, offsets %zu/%zu%s: one way %.3f us, MPI_Irecv median %llu cycles\n", n, so, ro,
               header ? ", header first" : "", us, rd[(nrd < iters ? nrd : iters) / 2]);
    MPI_Finalize();
    return 0;
}
