#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
/* usage: pvm2 KiB pieceKiB mode(0 pvm 4K pages, 1 pvm THP, 2 memcpy from shared mapping) */
int main(int argc,char**argv){
  size_t S=(size_t)atol(argv[1])<<10, piece=(size_t)atol(argv[2])<<10; int mode=atoi(argv[3]); int reps=2000;
  volatile long *sh=mmap(NULL,4096,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  memset((void*)sh,0,4096);
  char *shbuf = mmap(NULL, 2*S, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0);
  int me; pid_t parent=getpid();
  pid_t c=fork(); me = c==0; pid_t other = c==0? parent : c;
  char *src, *dst;
  if (mode==1){ src=aligned_alloc(2<<20,(S+(2<<20)-1)&~((size_t)(2<<20)-1)); madvise(src,(S+(2<<20)-1)&~((size_t)(2<<20)-1),MADV_HUGEPAGE);} else src=malloc(S);
  if (mode==2) src = shbuf + me*S;
  dst=malloc(S); memset(src,1+me,S); memset(dst,0,S);
  sh[me]=(long)src; __sync_synchronize();
  while(!sh[1-me]);
  char *rsrc= mode==2 ? shbuf + (1-me)*S : (char*)sh[1-me];
  double best=1e9, tot=0;
  for(int r=0;r<reps;r++){
    __sync_fetch_and_add(&sh[2],1); while(sh[2]<2*(r+1));
    double t0=now();
    for(size_t off=0;off<S;off+=piece){
      size_t n=S-off<piece?S-off:piece;
      if (mode==2) memcpy(dst+off, rsrc+off, n);
      else { struct iovec l={dst+off,n}, rr={rsrc+off,n};
      if(process_vm_readv(other,&l,1,&rr,1,0)!=(ssize_t)n){perror("pvm");return 1;} }
    }
    double t=now()-t0; if(t<best)best=t; tot+=t;
    __sync_fetch_and_add(&sh[3],1); while(sh[3]<2*(r+1));
  }
  if(!me) printf("S %zu KiB piece %zu KiB mode %d: best %.2f us (%.2f GB/s) mean %.2f us (%.2f GB/s)\n",S>>10,piece>>10,mode,best*1e6,S/best/1e9,tot/reps*1e6,S/(tot/reps)/1e9);
  if(c) wait(NULL);
  return 0;
}
