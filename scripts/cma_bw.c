// process_vm_readv (CMA) bandwidth against memcpy on this machine, for docs/performance.md:
//   gcc -O2 -o /tmp/cma_bw scripts/cma_bw.c && /tmp/cma_bw 8388608 8388608
// Args: bytes, chunk per call. A child reads its parent's buffer 40 times.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <sys/wait.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  size_t n=(size_t)atol(argv[1]); size_t chunk=(size_t)atol(argv[2]);
  char*src=malloc(n); memset(src,1,n);
  pid_t parent=getpid();
  pid_t c=fork();
  if(c==0){
    char*dst=malloc(n); memset(dst,0,n);
    int it=40; double t0=now();
    for(int i=0;i<it;i++){
      for(size_t off=0;off<n;off+=chunk){
        size_t len = n-off<chunk? n-off:chunk;
        struct iovec l={dst+off,len}, r={src+off,len};
        if(process_vm_readv(parent,&l,1,&r,1,0)!=(ssize_t)len){perror("pvr");return 1;}
      }
    }
    double t=now()-t0; printf("cma %zu B chunk %zu: %.2f GB/s\n",n,chunk,(double)n*it/t/1e9);
    t0=now(); for(int i=0;i<it;i++) memcpy(dst,src,n); t=now()-t0;
    printf("memcpy (child's own copy of src, CoW-shared pages) %.2f GB/s\n",(double)n*it/t/1e9);
    return 0;
  }
  int st; waitpid(c,&st,0); return 0;
}
