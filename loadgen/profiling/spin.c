/* A pinned busy loop for `seconds` (argv[1]); prints its iterations per second (profiling/probe-vs-load.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int c,char**v){double s=atof(v[1]);double t0=now(),t;volatile unsigned long x=0;unsigned long n=0;
do{for(int i=0;i<10000;i++)x+=i*i;n++;t=now();}while(t-t0<s);printf("%.0f\n",n/(t-t0));return 0;}
