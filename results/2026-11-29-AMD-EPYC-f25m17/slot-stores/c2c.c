#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static _Alignas(64) _Atomic long flag;
static char *buf; static size_t n = 262144; static int laps = 2000;
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
static void *pong(void *x){(void)x; pin(1);
  for(long i=1;i<=200000;i++){ while(atomic_load_explicit(&flag,memory_order_acquire)!=2*i-1); atomic_store_explicit(&flag,2*i,memory_order_release);} 
  /* consumer: read the buffer after each lap */
  volatile long sink=0;
  for(int l=1;l<=laps;l++){ while(atomic_load_explicit(&flag,memory_order_acquire)!=400000+2*l-1);
    long s=0; for(size_t k=0;k<n;k+=64) s+=buf[k]; sink+=s;
    atomic_store_explicit(&flag,400000+2*l,memory_order_release);}
  return 0;}
int main(int argc,char**argv){ if(argc>1) n=strtoul(argv[1],0,0);
  buf=aligned_alloc(4096,n); char*src=aligned_alloc(4096,n+64); memset(src,3,n+64); memset(buf,0,n);
  pthread_t t; pthread_create(&t,0,pong,0); pin(0);
  double t0=now();
  for(long i=1;i<=200000;i++){ atomic_store_explicit(&flag,2*i-1,memory_order_release); while(atomic_load_explicit(&flag,memory_order_acquire)!=2*i);} 
  double rt=(now()-t0)/200000;
  double tw=0; t0=now();
  for(int l=1;l<=laps;l++){ double a=now(); memcpy(buf,src+16,n); tw+=now()-a;
    atomic_store_explicit(&flag,400000+2*l-1,memory_order_release); while(atomic_load_explicit(&flag,memory_order_acquire)!=400000+2*l);} 
  double tl=(now()-t0)/laps;
  printf("round trip %.0f ns; write %zu B into lines the other core read: %.1f us (%.2f GB/s); lap %.1f us\n", rt*1e9, n, tw/laps*1e6, n/(tw/laps)/1e9, tl*1e6);
  pthread_join(t,0);}
