/* nibble_sim.c (session 45, bench/wip/nibble_unshifted.patch): the integer path's arithmetic per
 * group of 64 elements, simulated on the CPU: the old scheme (every element three digits of x / E,
 * the high nibbles shifted down) against the new (the high nibbles' elements as 16 q times four
 * digits of x / (16 E)), each against the exact dot product, with the lanes' combination
 * (128 D0 + D1) 2^-7 E + (128 D2 + D3) 2^-21 E as the kernel makes it. Prints the largest and
 * mean error relative to sum |q x| and counts digits out of range. cc -O2 nibble_sim.c -lm */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>
#include <stdint.h>
static float urand(void){return rand()/(float)RAND_MAX;}
static void digits(float y, int nd, int *d){ /* y already divided by E */
  float n0=rintf(y), r=(y-n0)*128.0f; d[0]=(int)n0;
  for(int c=1;c<nd;c++){ float n=rintf(r); d[c]=(int)n; r=(r-n)*128.0f; }
}
int main(void){
  srand(7); double maxe_old=0,maxe_new=0, sum_old=0,sum_new=0; int N=200000; long over=0;
  for(int it=0;it<N;it++){
    float x[64]; int q[64]; float mx=0; int k=(int)(urand()*40)-20;
    for(int j=0;j<64;j++){ x[j]=ldexpf(urand()*2-1,k)*(it%3==0? (j%7==0?30:1):1); q[j]= (it%5==0)?15:(int)(urand()*16)%16; if(fabsf(x[j])>mx)mx=fabsf(x[j]); }
    float m127=mx/127.0f; uint32_t mb; memcpy(&mb,&m127,4); int be=(mb>>23)&255; if(be<26)be=26; if(be>252)be=252;
    float E=ldexpf(1,be+1-127), inv=ldexpf(1,126-be);
    double exact=0; for(int j=0;j<64;j++) exact+=(double)q[j]*x[j];
    /* old: all elements 3 digits of x/E; S_c = sum q d_c */
    long S[4]={0,0,0,0}, T[4]={0,0,0,0};
    for(int j=0;j<64;j++){ int d[4]={0}; digits(x[j]*inv,3,d); for(int c=0;c<3;c++) S[c]+=(long)q[j]*d[c]; }
    /* new: even j (lo nibble) 3 digits of x/E, odd j (hi) 4 digits of x/(16E), A = 16 q */
    for(int j=0;j<64;j++){ int d[4]={0};
      if(j&1){ digits(x[j]*inv*(1.0f/16),4,d); for(int c=0;c<4;c++) T[c]+=(long)16*q[j]*d[c]; if(abs(d[0])>8||abs(d[1])>64||abs(d[2])>64||abs(d[3])>64) over++; }
      else { digits(x[j]*inv,3,d); for(int c=0;c<3;c++) T[c]+=(long)q[j]*d[c]; } }
    /* lane combination as the kernel: t0: (float)(128 S0 + S1) * E/128 ; t1: (float)(128 S2 + S3) * E * 2^-21 */
    float o_old = (float)(128*S[0]+S[1])*(E/128.0f) + (float)(128*S[2]+S[3])*(E/2097152.0f);
    float o_new = (float)(128*T[0]+T[1])*(E/128.0f) + (float)(128*T[2]+T[3])*(E/2097152.0f);
    if(llabs(128*T[0]+T[1])>=(1<<24)) over+=1000000;
    double scale=0; for(int j=0;j<64;j++) scale+=fabs((double)q[j]*x[j]);
    double eo=fabs(o_old-exact)/scale, en=fabs(o_new-exact)/scale;
    if(eo>maxe_old) maxe_old=eo;
    if(en>maxe_new) maxe_new=en;
    sum_old+=eo; sum_new+=en;
  }
  printf("relative to sum|q x|: old max %.3g mean %.3g ; new max %.3g mean %.3g ; digit range / exactness violations %ld\n",maxe_old,sum_old/N,maxe_new,sum_new/N,over);
  return 0;
}
