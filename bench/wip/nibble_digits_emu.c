/* nibble_digits_emu.c (session 45, bench/wip/nibble_unshifted.patch): dmv_i8_digits' new digit code
 * (i8_digits.cuh: fused fma steps, the 1.5 2^23 rounding trick, the high elements at inv / 16 with a
 * fourth digit) emulated in C against test_cuda_kernels.c's new ref_i8_digits, byte for byte, on
 * the test's group kinds plus random bit patterns over every exponent (2 M groups of 16 items).
 * cc -O2 -ffp-contract=off nibble_digits_emu.c -lm */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <stdint.h>
static uint64_t rng=12345; static float urand(void){rng=rng*6364136223846793005ull+1442695040888963407ull; return (float)((rng>>40)&0xffffff)/16777216.0f;}
static int fai(float f){int i; memcpy(&i,&f,4); return i;}
static float uaf(uint32_t u){float f; memcpy(&f,&u,4); return f;}
static uint32_t pack4(int a,int b,int c,int d){return (a&255)|(b&255)<<8|(c&255)<<16|(uint32_t)(d&255)<<24;}
/* emulation of the GPU's dmv_i8_digits for one item given the group's max (no shuffles) */
static void gpu_digits(const float *v, float mx, uint32_t *w){
  int be=(int)((fai(mx*(1.0f/127.0f))>>23)&255); be=be<26?26:be>252?252:be;
  float inv=uaf((uint32_t)(253-be)<<23), R=12582912.0f, R128=128.0f*R;
  int dg[4][8];
  for(int k=0;k<8;k++){ float iv=(k&1)?inv*0.0625f:inv;
    float t0=fmaf(v[k],iv,R), r0=fmaf(v[k],iv*128.0f,fmaf(t0,-128.0f,R128));
    float t1=r0+R, r1=fmaf(r0,128.0f,fmaf(t1,-128.0f,R128)), t2=r1+R;
    dg[0][k]=fai(t0); dg[1][k]=fai(t1); dg[2][k]=fai(t2);
    if(k&1) dg[3][k]=fai(fmaf(r1,128.0f,fmaf(t2,-128.0f,R128))+R); }
  for(int c=0;c<3;c++){ w[2*c]=pack4(dg[c][0],dg[c][2],dg[c][4],dg[c][6]); w[2*c+1]=pack4(dg[c][1],dg[c][3],dg[c][5],dg[c][7]); }
  w[6]=0; w[7]=pack4(dg[3][1],dg[3][3],dg[3][5],dg[3][7]);
}
static void ref(const float *v, float mx, uint32_t *words){
    const float m127 = mx * (1.0f / 127.0f); uint32_t mb; memcpy(&mb, &m127, 4);
    int be = (int)((mb >> 23) & 255u); be = be < 26 ? 26 : be > 252 ? 252 : be;
    const float inv = ldexpf(1.0f, 126 - be);
    uint8_t d[4][8];
    for (int k = 0; k < 8; k++) { const int hi = k & 1;
        double y = (double)v[k] * (hi ? ldexp(inv, -4) : inv);
        for (int c = 0; c < 4; c++) { const double n = c < 3 || hi ? nearbyint(y) : 0.0; d[c][k] = (uint8_t)(int8_t)n; y = (y - n) * 128.0; } }
    for (int c = 0; c < 4; c++) for (int h = 0; h < 2; h++)
        words[2 * c + h] = d[c][h] | (uint32_t)d[c][2 + h] << 8 | (uint32_t)d[c][4 + h] << 16 | (uint32_t)d[c][6 + h] << 24;
}
int main(void){
  long bad=0,n=0;
  for(int gi=0; gi<2000000; gi++){
    float g[128]; int lp=16; int kind=gi%5, k=(int)(urand()*100.0f);
    for(int j=0;j<lp*8;j++){
      if(kind==0) g[j]=ldexpf(urand()*127.0f,k);
      else if(kind==1){ float m=(float)(int)(urand()*90.0f), a=(float)(int)(urand()*7.0f), r=(float)(int)(urand()*60.0f);
        g[j]=ldexpf(j%4==0? m+0.5f : j%4==2? m+r/128.0f+1.0f/256.0f : j%4==1? 16.0f*a+8.0f : 16.0f*a+(r+0.5f)/8.0f, k); }
      else if(kind==2) g[j]= j/8%3==1?0.0f:urand()*3.0f;
      else if(kind==3) g[j]=ldexpf(urand(),-110-(gi%20));
      else { uint32_t u=(uint32_t)(urand()*4294967296.0); g[j]=uaf(u&0x7f7fffffu)*(urand()<0.5f?-1:1); if(!isfinite(g[j])) g[j]=0; }
      if(kind==1) g[0]=ldexpf(100.0f,k);
    }
    if(kind==1) g[0]=ldexpf(100.0f,k);
    float mx=0; for(int j=0;j<128;j++) mx=fmaxf(mx,fabsf(g[j]));
    for(int i=0;i<lp;i++){ uint32_t a[8],b[8]; gpu_digits(g+8*i,mx,a); ref(g+8*i,mx,b); n++; if(memcmp(a,b,32)){ if(bad++<3){printf("diff kind %d item %d:",kind,i); for(int c=0;c<8;c++)printf(" %08x/%08x",a[c],b[c]); printf("\n");} } }
  }
  printf("%ld items, %ld differ\n",n,bad); return bad!=0;
}
