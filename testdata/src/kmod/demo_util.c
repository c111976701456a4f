/*
 * demo_util.c - the helper half of kmod-demo.ko (see kmod_demo.h).
 *
 *   kd_checksum        .text, loop with kd_mix/kd_rotl32 inlined from the header
 *   kd_classify        .text, a switch (jump table in .rodata, .rela.rodata),
 *                      kd_clamp inlined
 *   kd_fold            static (LOCAL) function in .text
 *   kd_table_lookup    .text, reads the static kd_weights table (.rodata)
 *   kd_report_error    __cold: .text.unlikely
 *   kd_error_count     .bss (global), kd_last_error .data (global),
 *   kd_weights         .rodata (static), kd_history .bss (static)
 */
#include "kmod_demo.h"

u32 kd_error_count;
int kd_last_error = -1;

static const u32 kd_weights[16] = {
    0x9e3779b9, 0x7f4a7c15, 0x85ebca6b, 0xc2b2ae35,
    0x27d4eb2f, 0x165667b1, 0xd3a2646c, 0xfd7046c5,
    0xb55a4f09, 0x68e31da4, 0x1b873593, 0xcc9e2d51,
    0xe6546b64, 0x4cf5ad43, 0x2545f491, 0x9c8f3b71,
};

static int kd_history[8];

static noinline u32 kd_fold(u32 a, u32 b)
{
    u32 r = a;
    int i;

    for (i = 0; i < 4; i++) {
        r = kd_rotl32(r ^ b, 7 + i);
        b += kd_weights[(a + i) & 15];
    }
    return r ^ b;
}

u32 kd_checksum(const u8 *buf, unsigned long len)
{
    u32 h = 0x811c9dc5u;
    unsigned long i;

    for (i = 0; i < len; i++) {
        h = kd_mix(h, buf[i]);
        if ((i & 7) == 7)
            h = kd_fold(h, (u32)i);
    }
    return h;
}

int kd_classify(int v)
{
    int r;

    switch (v & 15) {
    case 0:
        r = 100;
        break;
    case 1:
        r = kd_clamp(v * 3, -50, 50);
        break;
    case 2:
        r = v >> 2;
        break;
    case 3:
        r = (int)kd_table_lookup((unsigned int)v);
        break;
    case 5:
        r = -v;
        break;
    case 7:
        r = kd_clamp(v - 1000, 0, 255);
        break;
    case 8:
        r = v ^ 0x5a5a;
        break;
    case 11:
        r = (int)kd_fold((u32)v, 11);
        break;
    case 13:
        r = v * v;
        break;
    default:
        kd_report_error(v);
        r = 0;
        break;
    }
    kd_history[v & 7] = r;
    return r;
}

u32 kd_table_lookup(unsigned int idx)
{
    u32 w = kd_weights[idx & 15];

    if (idx > 15)
        w = kd_rotl32(w, idx >> 4);
    return w;
}

void kd_report_error(int code)
{
    kd_error_count++;
    kd_last_error = code;
    if (kd_error_count > 1000)
        kd_error_count = kd_clamp((int)kd_error_count, 0, 1000);
}
