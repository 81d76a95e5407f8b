/* Exported scalar conversions (the loops use the inline forms of half.h directly). */
#include "kernels/half.h"
#include "kernels/reduce.h"

float orb_half_to_float(unsigned short h)
{
    return orb_h2f(h);
}

unsigned short orb_float_to_half(float f)
{
    return orb_f2h(f);
}

float orb_bf16_to_float(unsigned short h)
{
    return orb_b2f(h);
}

unsigned short orb_float_to_bf16(float f)
{
    return orb_f2b(f);
}
