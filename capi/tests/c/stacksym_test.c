/*
 * The C API's test program (built and run by capi/tests/c_api.rs, under valgrind).
 *
 *   stacksym_test DEBUG_DIR < script
 *
 * Each script line is a request; its answer is printed in the format c_api.rs prints the
 * Rust API's answers in, so the two are compared line by line:
 *
 *   elf PATH virt|offset ADDR...
 *   buildid HEX virt|offset ADDR...
 *   kernel KALLSYMS MODULES_DIR|- SYS_MODULE_DIR|- ADDR...
 *   find PATH PATTERN      (findm: with STACKSYM_FIND_MERGE_ALIASES)
 *   findk KALLSYMS PATTERN
 *   self ELF ADDR NAME NOT_ELF
 *               checks on this process (symbolize, normalize, unwind its own stack live and
 *               as a sample, threads, errors, the version, names and options); prints
 *               "ok ..." lines, exits 1 on a failed check
 *   python PID  every thread of the CPython process PID stopped with ptrace, each one's
 *               native stack merged with its Python frames (stacksym_python_unwind_process),
 *               the threads let go; prints per thread "thread TID ..." and its frames
 *               ("python FUNCTION FILE:LINE" or "native NAME", with the kind's name)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stacksym.h"

static stacksym_symbolizer *symbolizer;
static int failed;
/* An address above main's frame: the end of the stack copy check_unwind's sample takes. */
static uintptr_t stack_end;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            printf("FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond);                       \
            printf(__VA_ARGS__);                                                           \
            printf("\n");                                                                  \
            failed = 1;                                                                    \
        }                                                                                  \
    } while (0)

static const char *or_dash(const char *s) { return s ? s : "-"; }

static void print_hex_bytes(const uint8_t *bytes, size_t len) {
    if (!bytes) {
        printf("-");
        return;
    }
    for (size_t i = 0; i < len; i++)
        printf("%02x", bytes[i]);
}

static void print_error(stacksym_err err) {
    printf("error %s: %s\n", stacksym_err_name(err), or_dash(stacksym_last_error()));
}

static void print_syms(const stacksym_syms *syms) {
    for (size_t i = 0; i < syms->len; i++) {
        const stacksym_sym *s = &syms->syms[i];
        printf("%#" PRIx64 " reason=%u", s->input, s->reason);
        if (s->reason == STACKSYM_FOUND) {
            printf(" %s+%#" PRIx64 " size=%#" PRIx64 " addr=%#" PRIx64 " origin=%u data=%d",
                   s->name, s->offset, s->size, s->addr, s->origin, s->is_data);
            printf(" raw=%s ver=%s%s symfile=%s kmod=%s bid=", s->raw_name, or_dash(s->version),
                   s->version_hidden ? "(hidden)" : "", or_dash(s->symbol_file),
                   or_dash(s->kernel_module));
            print_hex_bytes(s->build_id, s->build_id_len);
        } else {
            printf(" detail=%s", or_dash(s->reason_detail));
        }
        printf(" module=%s fo=", or_dash(s->module));
        if (s->has_file_offset)
            printf("%#" PRIx64 "\n", s->file_offset);
        else
            printf("-\n");
        for (size_t f = 0; f < s->frames_len; f++) {
            const stacksym_frame *fr = &s->frames[f];
            printf("  %s %s:%u:%u d=%u%s\n", fr->function ? fr->function : "??",
                   fr->file ? fr->file : "??", fr->line, fr->column, fr->discriminator,
                   fr->inlined ? " inlined" : "");
        }
    }
}

static void print_matches(const stacksym_matches *m) {
    for (size_t i = 0; i < m->len; i++) {
        const stacksym_match *x = &m->matches[i];
        printf("%s %s addr=%#" PRIx64 " size=%#" PRIx64 " fo=", x->name, x->demangled, x->addr,
               x->size);
        if (x->has_file_offset)
            printf("%#" PRIx64, x->file_offset);
        else
            printf("-");
        printf(" data=%d bind=%u in=%u ver=%s%s kmod=%s file=%s aliases=", x->is_data, x->binding,
               x->found_in, or_dash(x->version), x->version_hidden ? "(hidden)" : "",
               or_dash(x->kernel_module), x->file);
        for (size_t a = 0; a < x->aliases_len; a++)
            printf("%s%s", a ? "," : "", x->aliases[a]);
        printf("\n");
    }
}

/* Splits `line` into at most `max` words; returns their count. */
static size_t split(char *line, char **words, size_t max) {
    size_t n = 0;
    for (char *w = strtok(line, " \t\n"); w && n < max; w = strtok(NULL, " \t\n"))
        words[n++] = w;
    return n;
}

static size_t parse_addrs(char **words, size_t n, uint64_t *addrs) {
    for (size_t i = 0; i < n; i++)
        addrs[i] = strtoull(words[i], NULL, 0);
    return n;
}

static stacksym_addr_kind addr_kind(const char *word) {
    return strcmp(word, "offset") == 0 ? STACKSYM_ADDR_FILE_OFFSET : STACKSYM_ADDR_VIRT;
}

/* ---- self checks ---- */

__attribute__((noinline)) int stacksym_c_probe(int x) {
    return x * 3 + 1;
}

static void check_process(void) {
    int (*volatile probe)(int) = stacksym_c_probe;
    void *anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(anon != MAP_FAILED, "mmap");
    uint64_t addrs[] = {(uint64_t)(uintptr_t)probe + 1, (uint64_t)(uintptr_t)anon, 0x1};
    stacksym_syms *syms = NULL;
    stacksym_err err = stacksym_symbolize_process(symbolizer, (uint32_t)getpid(), addrs, 3, &syms);
    CHECK(err == STACKSYM_OK, "%s", or_dash(stacksym_last_error()));
    if (err == STACKSYM_OK) {
        CHECK(syms->len == 3, "%zu", syms->len);
        CHECK(syms->syms[0].reason == STACKSYM_FOUND, "%u", syms->syms[0].reason);
        CHECK(syms->syms[0].name && strcmp(syms->syms[0].name, "stacksym_c_probe") == 0, "%s",
              or_dash(syms->syms[0].name));
        CHECK(syms->syms[0].offset == 1, "%" PRIu64, syms->syms[0].offset);
        CHECK(syms->syms[1].reason == STACKSYM_NOT_IN_FILE, "%u", syms->syms[1].reason);
        CHECK(syms->syms[2].reason == STACKSYM_UNMAPPED, "%u", syms->syms[2].reason);
        printf("ok process: %s+%#" PRIx64 " in %s\n", syms->syms[0].name, syms->syms[0].offset,
               syms->syms[0].module);
    }
    stacksym_syms_free(syms);
    munmap(anon, 4096);
}

static void check_normalize(void) {
    int (*volatile probe)(int) = stacksym_c_probe;
    uint64_t addr = (uint64_t)(uintptr_t)probe + 2;
    stacksym_normalized *norm = NULL;
    stacksym_err err = stacksym_normalize(symbolizer, (uint32_t)getpid(), &addr, 1, &norm);
    CHECK(err == STACKSYM_OK, "%s", or_dash(stacksym_last_error()));
    if (err != STACKSYM_OK)
        return;
    const stacksym_normalized_addr *n = &norm->addrs[0];
    CHECK(n->kind == STACKSYM_NORM_FILE, "%u", n->kind);
    CHECK(n->has_virt_addr, "no virtual address");
    CHECK(n->build_id_len > 0, "no build-id");
    /* Back from (path, file offset) and (path, virtual address) to the name. */
    stacksym_syms *by_offset = NULL, *by_virt = NULL;
    err = stacksym_symbolize_elf(symbolizer, n->path, STACKSYM_ADDR_FILE_OFFSET, &n->file_offset,
                                 1, &by_offset);
    CHECK(err == STACKSYM_OK, "%s", or_dash(stacksym_last_error()));
    err = stacksym_symbolize_elf(symbolizer, n->path, STACKSYM_ADDR_VIRT, &n->virt_addr, 1,
                                 &by_virt);
    CHECK(err == STACKSYM_OK, "%s", or_dash(stacksym_last_error()));
    if (by_offset && by_virt) {
        CHECK(by_offset->syms[0].name && strcmp(by_offset->syms[0].name, "stacksym_c_probe") == 0,
              "%s", or_dash(by_offset->syms[0].name));
        CHECK(by_virt->syms[0].name && strcmp(by_virt->syms[0].name, "stacksym_c_probe") == 0,
              "%s", or_dash(by_virt->syms[0].name));
        CHECK(by_offset->syms[0].offset == 2 && by_virt->syms[0].offset == 2, "offsets");
        printf("ok normalize: %s+%#" PRIx64 " at file offset %#" PRIx64 "\n",
               by_offset->syms[0].name, by_offset->syms[0].offset, n->file_offset);
    }
    stacksym_syms_free(by_offset);
    stacksym_syms_free(by_virt);
    stacksym_normalized_free(norm);
}

/* Functions whose frames the unwind checks name: never inlined, never cloned under another
 * name (gcc's .constprop/.isra copies). */
#if defined(__clang__)
#define UNWIND_FRAME __attribute__((noinline))
#else
#define UNWIND_FRAME __attribute__((noinline, noclone))
#endif

/* The instruction and stack pointers where this macro stands, in the caller's frame. */
#if defined(__x86_64__)
#define CAPTURE_IP_SP(ip, sp) __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1" : "=r"(ip), "=r"(sp))
#elif defined(__aarch64__)
#define CAPTURE_IP_SP(ip, sp) __asm__ volatile("adr %0, .\n\tmov %1, sp" : "=r"(ip), "=r"(sp))
#else
#error "stacksym unwinds x86_64 and aarch64"
#endif

/* The names of the first three frames of `stack`, which must be this file's unwind chain;
 * prints the "ok" line for `what`. */
static void check_stack(const char *what, stacksym_err err, const stacksym_stack *stack) {
    static const char *const want[] = {"stacksym_c_unwind_leaf", "stacksym_c_unwind_mid",
                                       "check_unwind"};
    CHECK(err == STACKSYM_OK, "%s: %s: %s", what, stacksym_err_name(err),
          or_dash(stacksym_last_error()));
    if (err != STACKSYM_OK)
        return;
    CHECK(stack->len >= 3, "%s: %zu frames, stop %u at %#" PRIx64, what, stack->len,
          stack->stop, stack->stop_addr);
    for (size_t i = 0; i < 3 && i < stack->len; i++) {
        const stacksym_stack_frame *f = &stack->frames[i];
        CHECK(f->sym.name && strcmp(f->sym.name, want[i]) == 0, "%s: frame %zu is %s, not %s",
              what, i, or_dash(f->sym.name), want[i]);
        CHECK(f->kind == (i == 0 ? STACKSYM_FRAME_IP : STACKSYM_FRAME_RETURN_ADDRESS),
              "%s: frame %zu kind %u", what, i, f->kind);
        CHECK(f->sym.input == f->lookup_addr &&
                  f->lookup_addr == (i == 0 ? f->addr : f->addr - 1),
              "%s: frame %zu looked up at %#" PRIx64, what, i, f->lookup_addr);
    }
    if (stack->len >= 3)
        printf("ok unwind %s: %s < %s < %s\n", what, stack->frames[0].sym.name,
               stack->frames[1].sym.name, stack->frames[2].sym.name);
}

/* Unwinds this thread from here twice: live (stacksym_unwind_process reads the frames above
 * this one, which stay as they are while it runs) and as a perf sample would (registers and
 * a copy of the stack from the stack pointer up to stack_end). */
UNWIND_FRAME int stacksym_c_unwind_leaf(int x) {
    uint64_t ip, sp;
    CAPTURE_IP_SP(ip, sp);
    uint64_t values[2] = {ip, sp};
    stacksym_regs regs = {STACKSYM_REGS_IP_SP_FP, 0, values, 2};
    stacksym_stack *stack = NULL;
    stacksym_err err = stacksym_unwind_process(symbolizer, (uint32_t)getpid(), &regs, &stack);
    check_stack("process", err, stack);
    stacksym_stack_free(stack);

    size_t len = stack_end - (uintptr_t)sp;
    uint8_t *copy = malloc(len);
    CHECK(copy != NULL, "malloc %zu", len);
    memcpy(copy, (const void *)(uintptr_t)sp, len);
    stack = NULL;
    err = stacksym_unwind_sample(symbolizer, (uint32_t)getpid(), &regs, copy, len, &stack);
    check_stack("sample", err, stack);
    stacksym_stack_free(stack);
    free(copy);
    return x + 1;
}

UNWIND_FRAME int stacksym_c_unwind_mid(int x) {
    int r = stacksym_c_unwind_leaf(x + 1);
    __asm__ volatile("" ::: "memory"); /* no tail call: this frame stays on the stack */
    return r * 2;
}

UNWIND_FRAME void check_unwind(void) {
    volatile int r = stacksym_c_unwind_mid(1);
    (void)r;
    __asm__ volatile("" ::: "memory");
}

struct thread_arg {
    const char *path;
    uint64_t addr;
    const char *want;
    int ok;
    int own_error_seen;
};

static void *symbolize_in_thread(void *p) {
    struct thread_arg *arg = p;
    arg->ok = 1;
    for (int i = 0; i < 20; i++) {
        stacksym_syms *syms = NULL;
        uint64_t addrs[] = {arg->addr, arg->addr + 1};
        if (stacksym_symbolize_elf(symbolizer, arg->path, STACKSYM_ADDR_VIRT, addrs, 2, &syms) !=
                STACKSYM_OK ||
            syms->len != 2 || !syms->syms[0].name || strcmp(syms->syms[0].name, arg->want) != 0)
            arg->ok = 0;
        stacksym_syms_free(syms);
    }
    /* This thread's error message is its own. */
    stacksym_syms *none = NULL;
    stacksym_err err = stacksym_symbolize_elf(symbolizer, "/nonexistent/thread", STACKSYM_ADDR_VIRT,
                                              &arg->addr, 1, &none);
    arg->own_error_seen = err == STACKSYM_ERR_NOT_FOUND && stacksym_last_error() &&
                          strstr(stacksym_last_error(), "/nonexistent/thread") != NULL;
    return NULL;
}

static void check_threads(const char *path, uint64_t addr, const char *want) {
    /* An error on this thread first: the threads' own errors must not replace it. */
    stacksym_syms *none = NULL;
    stacksym_symbolize_elf(symbolizer, "/nonexistent/main", STACKSYM_ADDR_VIRT, &addr, 1, &none);
    pthread_t threads[4];
    struct thread_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (struct thread_arg){path, addr, want, 0, 0};
        CHECK(pthread_create(&threads[i], NULL, symbolize_in_thread, &args[i]) == 0, "create");
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        CHECK(args[i].ok, "thread %d got other answers", i);
        CHECK(args[i].own_error_seen, "thread %d did not see its error", i);
    }
    CHECK(strstr(or_dash(stacksym_last_error()), "/nonexistent/main") != NULL, "%s",
          or_dash(stacksym_last_error()));
    printf("ok threads: 4 threads x 20 batches on one handle\n");
}

/* The version macros and stacksym_version() agree; every code type's name function names its
 * constants; options are refused without their size, with a debug_dirs of NULL and a length,
 * and with a byte set past this version's fields. */
static void check_version_names_options(void) {
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", STACKSYM_VERSION_MAJOR, STACKSYM_VERSION_MINOR,
             STACKSYM_VERSION_PATCH);
    CHECK(strcmp(stacksym_version(), want) == 0, "%s != %s", stacksym_version(), want);
    printf("ok version: %s\n", stacksym_version());

    CHECK(strcmp(stacksym_reason_name(STACKSYM_KERNEL_ADDRS_HIDDEN),
                 "STACKSYM_KERNEL_ADDRS_HIDDEN") == 0, "reason");
    CHECK(strcmp(stacksym_origin_name(STACKSYM_ORIGIN_GO_TABLE), "STACKSYM_ORIGIN_GO_TABLE") == 0,
          "origin");
    CHECK(strcmp(stacksym_stop_name(STACKSYM_STOP_DEPTH_LIMIT), "STACKSYM_STOP_DEPTH_LIMIT") == 0,
          "stop");
    CHECK(strcmp(stacksym_found_in_name(STACKSYM_FOUND_IN_DEBUG_FILE),
                 "STACKSYM_FOUND_IN_DEBUG_FILE") == 0, "found_in");
    CHECK(strcmp(stacksym_recovery_name(STACKSYM_RECOVERED_CFI), "STACKSYM_RECOVERED_CFI") == 0,
          "recovery");
    CHECK(strcmp(stacksym_reason_name(99), "unknown") == 0, "unknown reason");
    printf("ok names: %s %s\n", stacksym_stop_name(STACKSYM_STOP_ROOT),
           stacksym_frame_kind_name(STACKSYM_FRAME_RETURN_ADDRESS));

    stacksym_symbolizer *made = (stacksym_symbolizer *)&failed; /* set to NULL on failure */
    stacksym_options options;
    memset(&options, 0xff, sizeof options);
    CHECK(stacksym_options_init(&options, sizeof options) == STACKSYM_OK, "init");
    CHECK(options.size == sizeof options && options.demangle && options.debug_dirs == NULL &&
          options.debug_dirs_len == 0 && options.threads == 1, "defaults");
    CHECK(stacksym_options_init(&options, 4) == STACKSYM_ERR_INVALID_ARGUMENT, "a short size");
    CHECK(stacksym_options_init(NULL, sizeof options) == STACKSYM_ERR_INVALID_ARGUMENT, "NULL");
    stacksym_options unset = {0};
    CHECK(stacksym_symbolizer_new(&unset, &made) == STACKSYM_ERR_INVALID_ARGUMENT && !made,
          "size 0 accepted");
    CHECK(strstr(or_dash(stacksym_last_error()), "stacksym_options_init") != NULL, "%s",
          or_dash(stacksym_last_error()));
    stacksym_options_init(&options, sizeof options);
    options.debug_dirs_len = 2; /* and debug_dirs NULL */
    CHECK(stacksym_symbolizer_new(&options, &made) == STACKSYM_ERR_INVALID_ARGUMENT && !made,
          "NULL debug_dirs with a length accepted");
    /* A program built with a later header: a larger struct; a later field left at what
     * stacksym_options_init() wrote (0) is fine, one set is refused. */
    struct {
        stacksym_options options;
        uint64_t later_field;
    } later;
    memset(&later, 0xff, sizeof later);
    CHECK(stacksym_options_init(&later.options, sizeof later) == STACKSYM_OK, "later init");
    CHECK(later.later_field == 0 && later.options.size == sizeof later, "later defaults");
    CHECK(stacksym_symbolizer_new(&later.options, &made) == STACKSYM_OK && made, "%s",
          or_dash(stacksym_last_error()));
    stacksym_symbolizer_free(made);
    later.later_field = 1;
    CHECK(stacksym_symbolizer_new(&later.options, &made) == STACKSYM_ERR_INVALID_ARGUMENT, "%s",
          "a later option ignored");
    printf("ok options: size checked, debug_dirs NULL with a length refused\n");
}

static void check_errors(const char *elf, const char *not_elf) {
    uint64_t addr = 0x1000;
    stacksym_syms *syms = (stacksym_syms *)&addr; /* must be set to NULL on failure */
    stacksym_err err;

    err = stacksym_symbolize_elf(symbolizer, "/nonexistent/file", STACKSYM_ADDR_VIRT, &addr, 1, &syms);
    CHECK(err == STACKSYM_ERR_NOT_FOUND, "%s", stacksym_err_name(err));
    CHECK(syms == NULL, "out not cleared");
    CHECK(strstr(or_dash(stacksym_last_error()), "/nonexistent/file") != NULL, "%s",
          or_dash(stacksym_last_error()));
    printf("ok not found: %s: %s\n", stacksym_err_name(err), stacksym_last_error());

    err = stacksym_symbolize_elf(symbolizer, not_elf, STACKSYM_ADDR_VIRT, &addr, 1, &syms);
    CHECK(err == STACKSYM_ERR_MALFORMED, "%s", stacksym_err_name(err));
    printf("ok not an ELF file: %s\n", stacksym_err_name(err));

    err = stacksym_symbolize_elf(symbolizer, NULL, STACKSYM_ADDR_VIRT, &addr, 1, &syms);
    CHECK(err == STACKSYM_ERR_INVALID_ARGUMENT, "%s", stacksym_err_name(err));
    err = stacksym_symbolize_elf(NULL, elf, STACKSYM_ADDR_VIRT, &addr, 1, &syms);
    CHECK(err == STACKSYM_ERR_INVALID_ARGUMENT, "%s", stacksym_err_name(err));
    err = stacksym_symbolize_elf(symbolizer, elf, 7, &addr, 1, &syms);
    CHECK(err == STACKSYM_ERR_INVALID_ARGUMENT, "%s", stacksym_err_name(err));
    err = stacksym_symbolize_elf(symbolizer, elf, STACKSYM_ADDR_VIRT, NULL, 3, &syms);
    CHECK(err == STACKSYM_ERR_INVALID_ARGUMENT, "%s", stacksym_err_name(err));
    err = stacksym_symbolize_elf(symbolizer, elf, STACKSYM_ADDR_VIRT, &addr, 1, NULL);
    CHECK(err == STACKSYM_ERR_INVALID_ARGUMENT, "%s", stacksym_err_name(err));
    err = stacksym_find_elf(symbolizer, elf, NULL, 0, NULL);
    CHECK(err == STACKSYM_ERR_INVALID_ARGUMENT, "%s", stacksym_err_name(err));
    stacksym_matches *bad_flags = NULL;
    err = stacksym_find_elf(symbolizer, elf, "main", 0x80, &bad_flags);
    CHECK(err == STACKSYM_ERR_INVALID_ARGUMENT && bad_flags == NULL, "%s", stacksym_err_name(err));
    uint64_t two[2] = {0x1000, 0x2000};
    stacksym_regs bad_layout = {99, 0, two, 2};
    stacksym_regs short_user = {STACKSYM_REGS_USER, 0, two, 2};
    stacksym_stack *stack = NULL;
    err = stacksym_unwind_process(symbolizer, (uint32_t)getpid(), &bad_layout, &stack);
    CHECK(err == STACKSYM_ERR_INVALID_ARGUMENT && stack == NULL, "%s", stacksym_err_name(err));
    err = stacksym_unwind_process(symbolizer, (uint32_t)getpid(), &short_user, &stack);
    CHECK(err == STACKSYM_ERR_INVALID_ARGUMENT, "%s", stacksym_err_name(err));
    err = stacksym_unwind_sample(symbolizer, (uint32_t)getpid(), NULL, NULL, 0, &stack);
    CHECK(err == STACKSYM_ERR_INVALID_ARGUMENT, "%s", stacksym_err_name(err));
    /* No addresses in a batch is fine, and gives an empty result. */
    stacksym_syms_free(syms);
    syms = NULL;
    err = stacksym_symbolize_elf(symbolizer, elf, STACKSYM_ADDR_VIRT, NULL, 0, &syms);
    CHECK(err == STACKSYM_OK && syms && syms->len == 0, "%s", stacksym_err_name(err));
    stacksym_syms_free(syms);
    printf("ok invalid arguments: %s\n", stacksym_err_name(STACKSYM_ERR_INVALID_ARGUMENT));

    /* A pid above the kernel's limit (4194304) never exists. */
    err = stacksym_symbolize_process(symbolizer, 4194305u * 2, &addr, 1, &syms);
    CHECK(err == STACKSYM_ERR_PROCESS_GONE, "%s: %s", stacksym_err_name(err),
          or_dash(stacksym_last_error()));
    stacksym_normalized *normalized = NULL;
    err = stacksym_normalize(symbolizer, 4194305u * 2, &addr, 1, &normalized);
    CHECK(err == STACKSYM_ERR_PROCESS_GONE && !normalized, "%s", stacksym_err_name(err));
    uint64_t ip_sp[2] = {0x1000, 0x2000};
    stacksym_regs regs = {STACKSYM_REGS_IP_SP_FP, 0, ip_sp, 2};
    stacksym_stack *gone_stack = NULL;
    err = stacksym_unwind_process(symbolizer, 4194305u * 2, &regs, &gone_stack);
    CHECK(err == STACKSYM_ERR_PROCESS_GONE && !gone_stack, "%s", stacksym_err_name(err));
    printf("ok process gone: %s\n", stacksym_err_name(err));

    uint8_t no_such_build_id[20] = {0xde, 0xad, 0xbe, 0xef};
    err = stacksym_symbolize_build_id(symbolizer, no_such_build_id, 20, STACKSYM_ADDR_VIRT, &addr, 1,
                                      &syms);
    CHECK(err == STACKSYM_ERR_NOT_FOUND, "%s: %s", stacksym_err_name(err),
          or_dash(stacksym_last_error()));
    printf("ok unknown build-id: %s\n", stacksym_err_name(err));

    /* Nothing matched is not an error. */
    stacksym_matches *m = NULL;
    err = stacksym_find_elf(symbolizer, elf, "no_such_function_anywhere", 0, &m);
    CHECK(err == STACKSYM_OK && m && m->len == 0, "%s", stacksym_err_name(err));
    stacksym_matches_free(m);

    stacksym_syms_free(NULL);
    stacksym_normalized_free(NULL);
    stacksym_matches_free(NULL);
    stacksym_stack_free(NULL);
    stacksym_symbolizer_free(NULL);
}

/* ---- Python ---- */

/* The registers of the ptrace-stopped thread `tid` as STACKSYM_REGS_USER wants them (the
 * kernel's user_regs_struct / user_pt_regs); 0 on success. */
static int thread_regs(pid_t tid, uint64_t *values, size_t *len) {
#if defined(__x86_64__)
    struct user_regs_struct raw;
#else
    struct user_pt_regs raw;
#endif
    struct iovec iov = {&raw, sizeof raw};
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov) != 0)
        return -1;
    *len = sizeof raw / sizeof(uint64_t);
    memcpy(values, &raw, sizeof raw);
    return 0;
}

/* Stops every thread of `pid` (PTRACE_SEIZE + PTRACE_INTERRUPT), prints each one's merged
 * stack, then lets them all go. */
static void python_stacks(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    CHECK(dir != NULL, "%s", path);
    if (!dir)
        return;
    pid_t tids[512];
    size_t count = 0;
    for (struct dirent *entry; (entry = readdir(dir)) && count < 512;) {
        pid_t tid = (pid_t)atoi(entry->d_name);
        if (tid <= 0)
            continue;
        if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0 ||
            ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0) {
            CHECK(0, "PTRACE_SEIZE/INTERRUPT %d", (int)tid);
            continue;
        }
        int status;
        CHECK(waitpid(tid, &status, __WALL) == tid, "waitpid %d", (int)tid);
        tids[count++] = tid;
    }
    closedir(dir);
    for (size_t i = 0; i < count; i++) {
        uint64_t values[64];
        size_t len = 0;
        if (thread_regs(tids[i], values, &len) != 0) {
            CHECK(0, "PTRACE_GETREGSET %d", (int)tids[i]);
            continue;
        }
        stacksym_regs regs = {STACKSYM_REGS_USER, 0, values, len};
        stacksym_python_stack *stack = NULL;
        stacksym_err err =
            stacksym_python_unwind_process(symbolizer, (uint32_t)pid, (uint32_t)tids[i], &regs, &stack);
        if (err != STACKSYM_OK) {
            print_error(err);
            continue;
        }
        CHECK(stack->tid == (uint32_t)tids[i], "tid %u", stack->tid);
        printf("thread %u state=%d version=%s error=%s frames=%zu stop=%s\n", stack->tid,
               stack->has_thread_state, stack->python_version, or_dash(stack->python_error),
               stack->len, stacksym_stop_name(stack->stop));
        for (size_t f = 0; f < stack->len; f++) {
            const stacksym_mixed_frame *frame = &stack->frames[f];
            const char *kind = stacksym_mixed_kind_name(frame->kind);
            if (frame->kind == STACKSYM_MIXED_PYTHON) {
                CHECK(frame->native.sym.name == NULL && frame->native.addr == 0,
                      "a Python frame's native member is set");
                printf("  %s %s %s:%u entry=%d\n", kind, frame->python.function,
                       frame->python.file, frame->python.line, frame->python.is_entry);
            } else {
                CHECK(frame->kind == STACKSYM_MIXED_NATIVE && frame->python.function == NULL,
                      "kind %u", frame->kind);
                printf("  %s %s\n", kind, or_dash(frame->native.sym.name));
            }
        }
        stacksym_python_stack_free(stack);
    }
    for (size_t i = 0; i < count; i++)
        ptrace(PTRACE_DETACH, tids[i], NULL, NULL);
    /* Not a CPython process (this one): STACKSYM_ERR_NOT_FOUND, nothing handed out. */
    stacksym_python_stack *none = (stacksym_python_stack *)1;
    uint64_t values[2] = {0, 0};
    stacksym_regs regs = {STACKSYM_REGS_IP_SP_FP, 0, values, 2};
    stacksym_err err = stacksym_python_unwind_process(symbolizer, (uint32_t)getpid(),
                                                      (uint32_t)getpid(), &regs, &none);
    CHECK(err == STACKSYM_ERR_NOT_FOUND && none == NULL, "%s", stacksym_err_name(err));
    printf("ok not python: %s\n", stacksym_err_name(err));
    CHECK(strcmp(stacksym_mixed_kind_name(STACKSYM_MIXED_PYTHON), "STACKSYM_MIXED_PYTHON") == 0,
          "the name of STACKSYM_MIXED_PYTHON");
    CHECK(strcmp(stacksym_mixed_kind_name(7), "unknown") == 0, "an unknown kind");
    stacksym_python_stack_free(NULL);
}

int main(int argc, char **argv) {
    volatile char marker = 0;
    /* main's frame, its saved registers and return address, and some of its caller's. */
    stack_end = (uintptr_t)&marker + 256;
    stacksym_options options;
    if (stacksym_options_init(&options, sizeof options) != STACKSYM_OK) {
        print_error(STACKSYM_ERR_INVALID_ARGUMENT);
        return 1;
    }
    const char *debug_dirs[1];
    if (argc > 1) {
        debug_dirs[0] = argv[1];
        options.debug_dirs = debug_dirs;
        options.debug_dirs_len = 1;
    }
    stacksym_err err = stacksym_symbolizer_new(&options, &symbolizer);
    if (err != STACKSYM_OK) {
        print_error(err);
        return 1;
    }
    char line[4096];
    char *words[64];
    uint64_t addrs[64];
    while (fgets(line, sizeof line, stdin)) {
        printf("== %s", line);
        size_t n = split(line, words, 64);
        if (n == 0)
            continue;
        stacksym_syms *syms = NULL;
        stacksym_matches *matches = NULL;
        err = STACKSYM_OK;
        if (strcmp(words[0], "elf") == 0 && n >= 3) {
            size_t len = parse_addrs(words + 3, n - 3, addrs);
            err = stacksym_symbolize_elf(symbolizer, words[1], addr_kind(words[2]), addrs, len, &syms);
        } else if (strcmp(words[0], "buildid") == 0 && n >= 3) {
            uint8_t id[64];
            size_t id_len = strlen(words[1]) / 2;
            for (size_t i = 0; i < id_len && i < sizeof id; i++)
                sscanf(words[1] + 2 * i, "%2hhx", &id[i]);
            size_t len = parse_addrs(words + 3, n - 3, addrs);
            err = stacksym_symbolize_build_id(symbolizer, id, id_len, addr_kind(words[2]), addrs,
                                              len, &syms);
        } else if (strcmp(words[0], "kernel") == 0 && n >= 4) {
            stacksym_kernel_source kernel = {0};
            kernel.kallsyms = words[1];
            kernel.modules_dir = strcmp(words[2], "-") ? words[2] : NULL;
            kernel.sys_module_dir = strcmp(words[3], "-") ? words[3] : NULL;
            size_t len = parse_addrs(words + 4, n - 4, addrs);
            err = stacksym_symbolize_kernel(symbolizer, &kernel, addrs, len, &syms);
        } else if (strcmp(words[0], "find") == 0 && n == 3) {
            err = stacksym_find_elf(symbolizer, words[1], words[2], 0, &matches);
        } else if (strcmp(words[0], "findm") == 0 && n == 3) {
            err = stacksym_find_elf(symbolizer, words[1], words[2], STACKSYM_FIND_MERGE_ALIASES,
                                    &matches);
        } else if (strcmp(words[0], "findk") == 0 && n == 3) {
            stacksym_kernel_source kernel = {0};
            kernel.kallsyms = words[1];
            err = stacksym_find_kernel(symbolizer, &kernel, words[2], 0, &matches);
        } else if (strcmp(words[0], "self") == 0 && n == 5) {
            check_process();
            check_normalize();
            check_unwind();
            check_threads(words[1], strtoull(words[2], NULL, 0), words[3]);
            check_errors(words[1], words[4]);
            check_version_names_options();
        } else if (strcmp(words[0], "python") == 0 && n == 2) {
            python_stacks((pid_t)strtol(words[1], NULL, 10));
        } else {
            printf("bad request\n");
            failed = 1;
        }
        if (err != STACKSYM_OK)
            print_error(err);
        if (syms) {
            if (syms->debug_error)
                printf("debug error: %s\n", syms->debug_error);
            print_syms(syms);
        }
        if (matches)
            print_matches(matches);
        stacksym_syms_free(syms);
        stacksym_matches_free(matches);
    }
    stacksym_symbolizer_free(symbolizer);
    return failed;
}
