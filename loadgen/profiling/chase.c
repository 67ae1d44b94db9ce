/* A memory-bound loop: a random pointer chase over argv[1] MB (one cache miss a step beyond the caches) for argv[2]
   seconds; prints "<tick seconds> <steps>" every 0.1 s, as the steadiness probe's busy loop prints its count
   (profiling/memory-vs-loop.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int c,char**v){size_t n=(size_t)atoi(v[1])*1024*1024/sizeof(size_t);double secs=atof(v[2]);
size_t*next=malloc(n*sizeof(size_t)),*order=malloc(n*sizeof(size_t));if(!next||!order)return 1;
for(size_t i=0;i<n;i++)order[i]=i;
srand(1);for(size_t i=n-1;i>0;i--){size_t j=((size_t)rand()*RAND_MAX+rand())%(i+1),t=order[i];order[i]=order[j];order[j]=t;}
for(size_t i=0;i<n;i++)next[order[i]]=order[(i+1)%n];
free(order);volatile size_t x=0;size_t at=0;long k=0;double start=now(),last=start;
for(;;){for(int i=0;i<1000;i++)at=next[at];k+=1000;double t=now();
if(t-last>=0.1){printf("%.6f %ld\n",t-last,k);fflush(stdout);k=0;last=t;if(t-start>=secs)break;}}
x=at;return (int)(x&0);}
