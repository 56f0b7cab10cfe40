/* Two ranks exchange BYTES of floats over raw MPI (Isend/Irecv, Open MPI's vader
 * single-copy read past 4 KiB), then each folds what it got into a buffer: how much it
 * costs to write a buffer the peer has just read with CMA (docs/performance.md, "The
 * staging all-reduce writes only what peers fold").
 *
 *   mpicc -O2 -o /tmp/mpi_inplace scripts/mpi_inplace.c
 *   mpirun -np 2 /tmp/mpi_inplace BYTES MODE
 *
 * MODE 0: send `buf`, fold into `buf` (an in-place all-reduce: the buffer the peer read
 *         is the one written next);
 * MODE 1: the fold alone, no exchange;
 * MODE 2: send `buf`, fold into the received buffer (`tmp = buf + tmp`);
 * MODE 3: send another buffer, fold into `buf`.
 * Prints each rank's mean time in the exchange and in the fold. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    size_t n = (argc > 1 ? strtoull(argv[1], 0, 0) : 65536) / sizeof(float);
    int mode = argc > 2 ? atoi(argv[2]) : 0;
    float *buf = aligned_alloc(4096, n * 4 + 4096), *tmp = aligned_alloc(4096, n * 4 + 4096),
          *other = aligned_alloc(4096, n * 4 + 4096);
    for (size_t i = 0; i < n; i++) buf[i] = 1, tmp[i] = 1, other[i] = 2; /* no denormals */
    const int iters = 20000;
    double ex = 0, fold = 0;
    for (int it = 0; it < iters; it++) {
        double t0 = MPI_Wtime();
        if (mode != 1) {
            MPI_Request q[2];
            MPI_Irecv(tmp, (int)(n * 4), MPI_BYTE, 1 - me, 5, MPI_COMM_WORLD, &q[0]);
            MPI_Isend(mode == 3 ? other : buf, (int)(n * 4), MPI_BYTE, 1 - me, 5, MPI_COMM_WORLD, &q[1]);
            MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        }
        double t1 = MPI_Wtime();
        if (mode == 2)
            for (size_t i = 0; i < n; i++) tmp[i] = buf[i] * 0.5f + tmp[i] * 0.5f;
        else
            for (size_t i = 0; i < n; i++) buf[i] = buf[i] * 0.5f + tmp[i] * 0.5f;
        fold += MPI_Wtime() - t1;
        ex += t1 - t0;
    }
    printf("rank %d mode %d bytes %zu: exchange %.2f us, fold %.2f us\n", me, mode, n * 4, ex / iters * 1e6,
           fold / iters * 1e6);
    MPI_Finalize();
    return 0;
}
