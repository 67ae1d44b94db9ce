/* A low-duty CPU-speed meter (harness/basics/cpu_speed.py, profiling/speed_vs_load.py): every `period_ms` (argv[2])
   for `seconds` (argv[1]) it runs `chunks` (argv[3], 100 by default) chunks of arithmetic of about 2 us each and prints
   "start_s kept_chunks kept_ns best_ns". A chunk ten times longer than the best seen was preempted by a process of
   this machine and is left out: what stays is the chunks' own speed, which the host's contention for the physical
   core slows and the guest's scheduler does not. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static long ns(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000L+t.tv_nsec;}
int main(int argc,char**argv){
  if(argc<3)return 2;
  double seconds=atof(argv[1]);long period=atol(argv[2]);int chunks=argc>3?atoi(argv[3]):100;
  volatile unsigned long x=1;long t0=ns(),best=1L<<60;
  struct timespec pause={period/1000,(period%1000)*1000000L};
  while(ns()-t0<seconds*1e9){
    long start=ns(),previous=start,kept=0,sum=0;
    for(int c=0;c<chunks;c++){
      for(int i=0;i<1000;i++)x=x*6364136223846793005UL+1;
      long t=ns(),d=t-previous;previous=t;
      if(d<best)best=d;
      if(d<10*best){kept++;sum+=d;}
    }
    printf("%.4f %ld %ld %ld\n",start/1e9,kept,sum,best);fflush(stdout);
    nanosleep(&pause,0);
  }
  return 0;
}
