#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
typedef struct { size_t n; int nt; double best; pthread_barrier_t *bar; } arg_t;
static void add(float *c,const float *a,const float *b,size_t n,int nt){
  for(size_t i=0;i<n;i+=8){__m256 v=_mm256_add_ps(_mm256_load_ps(a+i),_mm256_load_ps(b+i)); if(nt)_mm256_stream_ps(c+i,v); else _mm256_store_ps(c+i,v);}
  if(nt)_mm_sfence();
}
static void *run(void *p){arg_t *x=p; size_t n=x->n;
  float *a=aligned_alloc(64,n*4),*b=aligned_alloc(64,n*4),*c=aligned_alloc(64,n*4);
  for(size_t i=0;i<n;i++){a[i]=i;b[i]=2*i;c[i]=0;}
  x->best=1e9;
  for(int r=0;r<12;r++){pthread_barrier_wait(x->bar);double t=now();add(c,a,b,n,x->nt);t=now()-t;if(r>=2&&t<x->best)x->best=t;}
  free(a);free(b);free(c);return NULL;}
int main(){
  for(size_t mb=1;mb<=64;mb*=2){
    double res[2];
    for(int nt=0;nt<2;nt++){
      pthread_barrier_t bar;pthread_barrier_init(&bar,NULL,2);
      arg_t x[2];pthread_t th[2];
      for(int k=0;k<2;k++){x[k]=(arg_t){mb<<18,nt,0,&bar};pthread_create(&th[k],NULL,run,&x[k]);}
      for(int k=0;k<2;k++)pthread_join(th[k],NULL);
      res[nt]=(double)(mb<<20)/(x[0].best>x[1].best?x[0].best:x[1].best)/1e9;
    }
    printf("%3zu MiB out: ordinary %.2f GB/s, streaming %.2f GB/s, stream/ordinary %.2f\n",mb,res[0],res[1],res[1]/res[0]);
  }
}
