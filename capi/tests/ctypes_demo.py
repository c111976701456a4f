"""stacksym from Python through ctypes, the way bcc's tools load libraries.
Usage: python3 ctypes_demo.py LIBSTACKSYM_CAPI_SO ELF ADDR  (run by capi/tests/c_api.rs)"""
import ctypes as C, sys

class Frame(C.Structure):
    _fields_ = [("function", C.c_char_p), ("file", C.c_char_p), ("line", C.c_uint32),
                ("column", C.c_uint32), ("discriminator", C.c_uint32), ("inlined", C.c_bool)]

class Sym(C.Structure):
    _fields_ = [("input", C.c_uint64), ("reason", C.c_uint32), ("origin", C.c_uint32)] + [
        (n, C.c_char_p) for n in ("reason_detail", "name", "raw_name", "version")] + [
        (n, C.c_uint64) for n in ("addr", "size", "offset")] + [
        (n, C.c_bool) for n in ("is_data", "version_hidden", "has_file_offset")] + [
        ("file_offset", C.c_uint64), ("module", C.c_char_p), ("symbol_file", C.c_char_p),
        ("build_id", C.POINTER(C.c_uint8)), ("build_id_len", C.c_size_t),
        ("kernel_module", C.c_char_p), ("frames", C.POINTER(Frame)), ("frames_len", C.c_size_t)]

class Syms(C.Structure):
    _fields_ = [("len", C.c_size_t), ("syms", C.POINTER(Sym)), ("debug_error", C.c_char_p)]

lib = C.CDLL(sys.argv[1])
lib.stacksym_last_error.restype = C.c_char_p
lib.stacksym_symbolize_elf.argtypes = [C.c_void_p, C.c_char_p, C.c_uint32,
    C.POINTER(C.c_uint64), C.c_size_t, C.POINTER(C.POINTER(Syms))]
handle = C.c_void_p()
assert lib.stacksym_symbolizer_new(None, C.byref(handle)) == 0, lib.stacksym_last_error()
addrs = (C.c_uint64 * 1)(int(sys.argv[3], 0))
out = C.POINTER(Syms)()
err = lib.stacksym_symbolize_elf(handle, sys.argv[2].encode(), 0, addrs, 1, C.byref(out))
assert err == 0, lib.stacksym_last_error()
sym = out.contents.syms[0]
print(f"{sym.name.decode()}+{sym.offset:#x}")
for f in sym.frames[:sym.frames_len]:
    print(f"  {(f.function or b'??').decode()} {(f.file or b'??').decode()}:{f.line}")
lib.stacksym_syms_free(out)
lib.stacksym_symbolizer_free(handle)
