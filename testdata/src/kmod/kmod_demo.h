/*
 * kmod_demo.h - shared by demo_main.c and demo_util.c, the two halves of the
 * kernel-module-shaped test object testdata/bin/kmod-demo.ko (see
 * ../../README.md, "Kernel module").
 *
 * No kernel headers: the few kernel types and attributes the "module" needs
 * are declared here, the way <linux/types.h>, <linux/init.h> and
 * <linux/compiler_attributes.h> define them.  Nothing calls a function that
 * is not defined in these files (a .ko's calls into the kernel would be
 * undefined symbols resolved at load time; none are needed here).
 *
 * The static inline helpers below are inlined at -O2 into functions of both
 * .c files, so the DWARF has DW_TAG_inlined_subroutine entries whose
 * call_file is a .c file and whose decl_file is this header.
 */
#ifndef KMOD_DEMO_H
#define KMOD_DEMO_H

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long u64;

#define KBUILD_MODNAME "kmod_demo"

/* <linux/init.h>: __init / __exit functions go to .init.text / .exit.text
 * (and are __cold, as the kernel's are). */
#define __init __attribute__((__section__(".init.text"), __cold__))
#define __exit __attribute__((__section__(".exit.text"), __cold__, __used__))
#define __cold __attribute__((__cold__))
#define noinline __attribute__((__noinline__))
#define __used __attribute__((__used__))

/* <linux/module.h>: MODULE_INFO(tag, "value") puts "tag=value" into
 * .modinfo, one NUL-terminated string per tag. */
#define __MODINFO_CAT(a, b) a##b
#define __MODINFO_ID(tag, n) __MODINFO_CAT(__UNIQUE_ID_##tag, n)
#define MODULE_INFO(tag, info)                                              \
    static const char __MODINFO_ID(tag, __COUNTER__)[]                      \
        __used __attribute__((__section__(".modinfo"), __aligned__(1))) =   \
            #tag "=" info

/* The start of the kernel's struct module (what the kernel's loader reads
 * from .gnu.linkonce.this_module): state, list, name, ..., init, exit. */
#define MODULE_NAME_LEN 56
struct module {
    int state;
    void *list[2];
    char name[MODULE_NAME_LEN];
    void *pad[6];
    int (*init)(void);
    void (*exit)(void);
} __attribute__((__aligned__(64)));

/* demo_util.c */
extern u32 kd_error_count;
extern int kd_last_error;
u32 kd_checksum(const u8 *buf, unsigned long len);
int kd_classify(int v);
u32 kd_table_lookup(unsigned int idx);
void kd_report_error(int code) __cold noinline;

/* demo_main.c */
extern int kd_param;
extern const char kd_banner[];
int kd_run(int n);

/* ------------------------------------------------ inline helpers */

static inline u32 kd_rotl32(u32 word, unsigned int shift)
{
    return (word << (shift & 31)) | (word >> ((-shift) & 31));
}

/* One step of a small multiplicative hash: inlined into kd_checksum's loop. */
static inline u32 kd_mix(u32 h, u8 byte)
{
    h ^= byte;
    h *= 0x01000193u;
    h = kd_rotl32(h, 5);
    return h;
}

static inline int kd_clamp(int v, int lo, int hi)
{
    if (v < lo)
        return lo;
    if (v > hi)
        return hi;
    return v;
}

#endif /* KMOD_DEMO_H */
