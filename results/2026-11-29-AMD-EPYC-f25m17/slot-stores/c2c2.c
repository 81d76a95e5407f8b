#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <time.h>
#include <immintrin.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static _Alignas(64) _Atomic long flag; static _Alignas(64) _Atomic long flag2;
static char *buf; static char *dstb; static size_t n = 262144; static int laps = 1000; static int nslot=8;
static volatile int mode; static double tread;
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
static void ntcopy(char*d,const char*s,size_t n){for(size_t i=0;i<n;i+=64){__m256i a=_mm256_loadu_si256((const __m256i*)(s+i)),b=_mm256_loadu_si256((const __m256i*)(s+i+32));_mm256_stream_si256((__m256i*)(d+i),a);_mm256_stream_si256((__m256i*)(d+i+32),b);}_mm_sfence();}
static void *reader(void *x){(void)x; pin(1); long seq=0;
  for(;;){ long f; while((f=atomic_load_explicit(&flag,memory_order_acquire))<=seq) if(f<0) return 0; 
    for(;seq<f;seq++){ double a=now(); memcpy(dstb, buf+(seq%nslot)*n, n); tread+=now()-a;
      if(mode==2) for(size_t i=0;i<n;i+=64) _mm_clflushopt(buf+(seq%nslot)*n+i);
      atomic_store_explicit(&flag2,seq+1,memory_order_release);} }
}
int main(int argc,char**argv){ if(argc>1) n=strtoul(argv[1],0,0); if(argc>2) nslot=atoi(argv[2]);
  buf=aligned_alloc(4096,n*nslot); dstb=aligned_alloc(4096,n); char*src=aligned_alloc(4096,n+64); memset(src,3,n+64); memset(buf,0,n*nslot); memset(dstb,0,n);
  pin(0);
  /* round trip */
  pthread_t t; 
  const char *names[]={"regular","nt-store","reader-flush"};
  for(int m=0;m<3;m++){ mode=m; tread=0; atomic_store(&flag,0); atomic_store(&flag2,0);
    pthread_create(&t,0,reader,0);
    double tw=0, t0=now();
    for(long l=0;l<laps;l++){ while(atomic_load_explicit(&flag2,memory_order_acquire) < l-nslot+1) ;
      double a=now(); if(m==1) ntcopy(buf+(l%nslot)*n, src+16, n); else memcpy(buf+(l%nslot)*n,src+16,n); tw+=now()-a;
      atomic_store_explicit(&flag,l+1,memory_order_release);} 
    while(atomic_load(&flag2)<laps); double tl=(now()-t0)/laps; atomic_store(&flag,-1); pthread_join(t,0);
    printf("%-12s write %.2f GB/s read %.2f GB/s pipeline %.2f GB/s | ", names[m], n/(tw/laps)/1e9, n/(tread/laps)/1e9, n/tl/1e9);
  }
  printf("\n");
}
