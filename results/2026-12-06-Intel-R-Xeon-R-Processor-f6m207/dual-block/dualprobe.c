#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kernels/reduce.h"
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(void){
  size_t bytes=256<<10; char *pool=aligned_alloc(4096, 4*bytes+4096); memset(pool,0,4*bytes+4096);
  orb_dtype_t dts[]={ORB_INT8,ORB_FLOAT16,ORB_BFLOAT16,ORB_FLOAT32,ORB_FLOAT64}; const char*nm[]={"int8","float16","bfloat16","float32","float64"};
  char *a=pool,*b=pool+bytes+64,*d=pool+2*bytes+128,*e=pool+3*bytes+192;
  for(int k=0;k<5;k++){ size_t n=bytes/orb_dtype_size(dts[k]); double b1=1e9,b2=1e9;
    for(int r=0;r<400;r++){double t0=now(); orb_kernel_reduce(d,NULL,a,b,n,dts[k],ORB_SUM,0); double t=now()-t0; if(t<b1)b1=t; t0=now(); orb_kernel_reduce(d,e,a,b,n,dts[k],ORB_SUM,0); t=now()-t0; if(t<b2)b2=t;}
    printf("%-9s d=a+b %6.2f  d,e=a+b %6.2f GB/s\n",nm[k],bytes/b1/1e9,bytes/b2/1e9);}
}
