/*
 * libversioned.c - shared library with ELF symbol versioning, for stacksym's
 * tests.  Built by ../build.sh with libversioned.map as the version script.
 *
 * Exported dynamic symbols (readelf --dyn-syms -W):
 *   vfunc@VERS_1    old, non-default ("hidden") version  -> vfunc_v1
 *   vfunc@@VERS_2   default version                      -> vfunc_v2
 *   vhelper         unversioned helper (version index 1, global)
 * The implementation names vfunc_v1 / vfunc_v2 are local (only in .symtab).
 */

#define NOINLINE __attribute__((noinline, noclone))

NOINLINE int vhelper(int x)
{
    return (x ^ 0x5a) + 7;
}

__attribute__((symver("vfunc@VERS_1"))) NOINLINE int vfunc_v1(int x)
{
    return x + 1;
}

__attribute__((symver("vfunc@@VERS_2"))) NOINLINE int vfunc_v2(int x)
{
    return x * 2 + vhelper(x);
}
