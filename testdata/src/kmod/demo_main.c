/*
 * demo_main.c - the module half of kmod-demo.ko (see kmod_demo.h and
 * ../../README.md, "Kernel module"): placed the way the kernel places a
 * module's code and data.
 *
 *   kd_process_one     static (LOCAL) function in .text, kd_clamp inlined
 *   kd_run             global function in .text, calls into demo_util.c
 *   kmod_demo_init     static __init function: .init.text; init_module is its
 *                      global alias (what module_init() defines)
 *   kmod_demo_exit     static __exit function: .exit.text; cleanup_module is
 *                      its global alias (module_exit())
 *   kd_param           .data (global), kd_state .bss (static),
 *   kd_banner          .rodata (global), kd_names .rodata with relocations
 *   __UNIQUE_ID_*      .modinfo strings (MODULE_LICENSE and friends)
 *   __this_module      .gnu.linkonce.this_module (struct module)
 *
 * The last part (name= and vermagic= in .modinfo, __this_module) is what
 * modpost generates into kmod_demo.mod.c for a real module.
 */
#include "kmod_demo.h"

int kd_param = 7;
const char kd_banner[] = "kmod_demo ready";

static int kd_state[32];

static const char *const kd_names[] = {
    "idle", "busy", "error", "done",
};

static noinline int kd_process_one(int v)
{
    int c = kd_classify(v);
    const char *name = kd_names[kd_clamp(c, 0, 3)];
    int acc = 0;

    while (*name)
        acc = acc * 31 + *name++;
    if (c < 0)
        acc = -acc;
    return kd_clamp(acc + c, -100000, 100000);
}

int kd_run(int n)
{
    u8 buf[64];
    int i, total = 0;

    for (i = 0; i < n && i < 32; i++) {
        kd_state[i] = kd_process_one(i * kd_param);
        total += kd_state[i];
    }
    for (i = 0; i < (int)sizeof(buf); i++)
        buf[i] = (u8)(kd_state[i & 31] + kd_banner[i & 15]);
    return total ^ (int)kd_checksum(buf, sizeof(buf));
}

static int __init kmod_demo_init(void)
{
    int r = kd_run(kd_param * 4);

    if (r == 0) {
        kd_report_error(-22);
        return -22;
    }
    kd_state[0] = r;
    return 0;
}

static void __exit kmod_demo_exit(void)
{
    int i;

    for (i = 0; i < 32; i++)
        kd_state[i] = 0;
    kd_last_error = 0;
}

/* module_init() / module_exit(): global aliases (with the target's attributes,
 * as the kernel's __copy() gives them) that __this_module.init / .exit point to. */
int init_module(void)
    __attribute__((__copy__(kmod_demo_init), __alias__("kmod_demo_init")));
void cleanup_module(void)
    __attribute__((__copy__(kmod_demo_exit), __alias__("kmod_demo_exit")));

MODULE_INFO(license, "GPL");
MODULE_INFO(author, "stacksym test fixtures");
MODULE_INFO(description, "module-shaped object for .ko symbolization tests");

/* ---- what modpost writes into kmod_demo.mod.c ---- */
MODULE_INFO(depends, "");
MODULE_INFO(retpoline, "Y");
MODULE_INFO(name, KBUILD_MODNAME);
MODULE_INFO(vermagic, "6.1.0-stacksym SMP preempt mod_unload modversions ");

struct module __this_module
    __attribute__((__section__(".gnu.linkonce.this_module"))) = {
    .name = KBUILD_MODNAME,
    .init = init_module,
    .exit = cleanup_module,
};
