//! The `stacksym symbolize` help texts: what `--help` prints, including every place where it deliberately
//! differs from llvm-symbolizer.

pub const ABOUT: &str =
    "Symbolize raw address dumps: llvm-symbolizer's flags, answers and layout, \
from ELF symbol tables and DWARF (source lines, inlined frames, separate debug files)";

pub const LONG_ABOUT: &str = "\
Symbolize raw address dumps: pipe a crash log, a sanitizer report or a hex dump through it
and get llvm-symbolizer's answers, in llvm-symbolizer's layout: function names from the ELF
symbol tables (.symtab, .dynsym, PLT entries), source lines and inlined frames from DWARF
(in the file itself or in its separate debug file, found by build-id or .gnu_debuglink).";

pub const AFTER_LONG_HELP: &str = "\
INPUT
  Each query is a positional argument or one line of input. As in llvm-symbolizer it is
      [CODE |DATA ][MODULE ]ADDRESS [ignored...]
  MODULE is there only when --obj is not: a path without blanks, or a \"quoted\" or
  'quoted' path. ADDRESS is read as llvm-symbolizer reads it: 0x1a2b hex, 0b101 binary,
  0o17 and 017 octal, and 1234 DECIMAL (GNU addr2line would read 1234 as hex). It is an ELF
  virtual address (for a PIE or a shared library: the runtime address minus the load base).
  Text after the address is ignored. A query that does not parse is echoed back on stdout,
  as llvm-symbolizer does, and explained on stderr with its line number.
  Extensions to llvm-symbolizer's syntax:
  - a line holding a sanitizer frame's (PATH+0xOFFSET), e.g.
        #3 0x55d1c3a91a2b in foo (/usr/bin/app+0x1a2b)
    asks for OFFSET in PATH, with or without --obj (OFFSET is pc minus the module base,
    which is the ELF virtual address); a #N frame line without it is invalid;
  - blank lines and '#' comments ('#' not followed by a digit) are skipped
    (llvm-symbolizer echoes them back);
  - a tab separates fields like a space.

  Where queries come from:
    ADDRESS arguments     those, in order (as llvm-symbolizer); '-' alone means stdin
                          (llvm-symbolizer would echo '-' back);
    --input FILE          the lines of FILE ('-': stdin); repeatable;
    neither               the lines of stdin (as llvm-symbolizer), except that
    no arguments at all   with stdin a terminal or empty, symbolizes the demo dump
                          testdata/dumps/demo.txt instead (from the current directory, else
                          from this crate's directory; its relative module paths likewise),
                          with a note on stderr. llvm-symbolizer would wait for stdin.

OUTPUT (--output-style)
  Per address, one frame per function of the inline chain at it, innermost first: the
  inlined functions, then the function whose machine code it is. An inlined frame's location
  is where it is; an outer frame's is the call site of the frame inside it. With
  --no-inlines, one frame: the innermost location under the outer function's name (in the
  GNU style: the innermost frame, name and location, as llvm-symbolizer's GNU style and
  addr2line without -i print it).
  LLVM  per frame: the function name (?? if none), then FILE:LINE:COLUMN (??:0:0 where DWARF
        does not cover the address); a blank line after the address.
        -p: `NAME at FILE:LINE:COLUMN`, inlined-by frames as ` (inlined by) NAME at ...`.
        DATA queries: the name, then START SIZE in decimal, then a blank line.
  GNU   the same without the blank line and the column: FILE:LINE (??:0 when unknown), and
        ` (discriminator N)` after the innermost frame's line when its line-table row has
        one, as llvm-symbolizer's GNU style.
  JSON  llvm-symbolizer's objects and keys (sorted, compact), one Symbol element per frame:
          {\"Address\":\"0x..\",\"ModuleName\":\"..\",\"Symbol\":[{\"Column\":..,\"Discriminator\":..,
           \"FileName\":\"..\",\"FunctionName\":\"..\",\"Line\":..,\"StartAddress\":\"0x..\",
           \"StartFileName\":\"..\",\"StartLine\":..}]}
        plus, on the frame the symbol names (the outer one), \"Offset\" (address minus symbol
        start, hex string), \"Size\" (symbol size, hex string) and \"Version\" (ELF symbol
        version, versioned symbols only). DATA queries give \"Data\":{\"Name\",\"Size\",\"Start\"}.
        Addresses given as arguments print one JSON array; input lines print one object per
        line, as llvm-symbolizer does. An unreadable module gives {\"Error\":{\"Message\":..}}
        for its first address and an empty \"Symbol\" list for the others, as
        llvm-symbolizer does.

  Function names (--functions):
    linkage  (the default, also -f) inlined frames by their DWARF name (the linkage name,
             demangled unless --no-demangle); the outer frame by the symbol table's name
             and start (e.g. process_value.cold, or one alias of several), as
             llvm-symbolizer; by DWARF where no symbol covers the address.
    short    DWARF's short name, DW_AT_name (bar for ns::Foo<int>::bar(int)), as
             llvm-symbolizer prints it; where the library could not read it (a DIE that
             refers into another unit, after LTO), derived from the demangled linkage name.
             ?? where DWARF does not cover the address, as in llvm-symbolizer.
    none     no name line.
  Paths: as DWARF gives them, joined with the compilation directory, as llvm-symbolizer
  prints them; -s/--basenames: the file name alone; --relativenames: without the
  compilation directory. The library does not report the compilation directory, so
  --relativenames only drops a leading ./ (the directory `.` that -ffile-prefix-map=DIR=.
  leaves); an absolute compilation directory stays (llvm-symbolizer would drop it).
  Debug files: DWARF is read from the file, else from its separate debug file:
  <DIR>/.build-id/xx/rest.debug (build-id checked), then .gnu_debuglink (CRC checked) in the
  file's directory, its .debug/ and <DIR>/<file's directory>; dwz supplementary files are
  followed. DIR is each --debug-file-directory (repeatable; default /usr/lib/debug when none
  is given, as llvm-symbolizer). Then debuginfod, see DEBUGINFOD.

  Differences from llvm-symbolizer 14 that remain:
  - JSON's \"StartFileName\" (the function's DW_AT_decl_file) is given; llvm-symbolizer 14
    leaves it \"\" (later versions fill it). \"StartLine\" is DW_AT_decl_line and
    \"StartAddress\" the symbol's start on the frame the symbol names, else the DWARF
    function's DW_AT_low_pc (an inlined copy's own; \"\" for code split by DW_AT_ranges), as
    in llvm-symbolizer; where the symbol comes from a separate debug file's .symtab (libc's),
    llvm-symbolizer, which does not read it, gives \"\" for a split function;
  - names come from the stacksym library, so they can differ: a PLT entry is named
    target@plt (llvm-symbolizer names the preceding symbol, often _init); among aliases
    (several names at one address) the library prefers GLOBAL over WEAK over LOCAL, then the
    first in the table (llvm-symbolizer takes another one); a .symtab name keeps its version
    as the file spells it (vfunc@@VERS_2, as llvm-symbolizer shows it; .dynsym versions are
    shown only in JSON's \"Version\"); C++ and Rust demanglers differ in details
    ({lambda(int)#1} vs 'lambda'(int), [clone .cold] vs (.cold), legacy Rust hashes). Data
    objects are named too, as llvm-symbolizer names them;
  - for a LOCAL symbol without DWARF, llvm-symbolizer takes a file name from the symbol
    table's preceding STT_FILE entry (crtstuff.c:0:0); stacksym does not report it, so the
    location stays ??:0:0;
  - --kernel answers have no source lines unless --vmlinux FILE or a module's .ko gives
    them (kallsyms has none): ??:0:0, named by the symbol even with --functions=short.
    With --vmlinux, the kernel image's addresses are named from vmlinux with its lines
    and inlined frames (a vmlinux that cannot be read or does not match kallsyms is a note
    on stderr, and kallsyms names the image); a module's addresses from its .ko (found in --modules-dir,
    default /lib/modules/$(uname -r); its sections' load addresses from --sys-module,
    default /sys/module, root only), with the .ko's or its build-id debug file's lines;
    where the .ko cannot be used, kallsyms' name (a note on stderr after the output says
    why). --pid answers have source lines and inlined frames from the mapped files'
    DWARF (debug files searched inside the process's root first, then the debug dirs).
  Differences from GNU addr2line -f -i -C (which the GNU style resembles):
  - the outer frame is named by the symbol table (process_value.cold, demo_alias), as
    llvm-symbolizer names it; addr2line names it by DWARF (process_value, demo_impl);
  - addr2line repeats the innermost row's ` (discriminator N)` on every frame of the chain
    (here, as in llvm-symbolizer, only the innermost frame has it), and prints ??:? for a
    known function without a line and FILE:? for line 0 (here ??:0 and FILE:0, as in
    llvm-symbolizer's GNU style);
  - addresses are read as llvm-symbolizer reads them (1234 is decimal; see INPUT).

LIVE PROCESSES AND THE KERNEL (not in llvm-symbolizer)
  --pid PID             every ADDRESS is an absolute address of the running process PID:
                        looked up in the file mapped there (its /proc/PID/maps), opened
                        through /proc/PID/root (a container's own files) or, for a deleted
                        file, /proc/PID/map_files. JSON's ModuleName is the mapped file's
                        path as the maps name it (\"\" when the address is in no file: heap,
                        stack, vDSO, unmapped); StartAddress is absolute too.
  --kernel              every ADDRESS is a kernel address, looked up in /proc/kallsyms
  --kallsyms FILE       (or FILE, e.g. a copy taken as root; implies --kernel). Only text
                        symbols answer. A module's symbol is printed as `name [module]`, as
                        perf prints it; JSON gives FunctionName without the suffix and
                        \"Module\": the module's name, or \"vmlinux\" for the kernel image;
                        ModuleName is the kallsyms file.
  --pid and --kernel    together: addresses with the top bit set (the kernel half on x86_64
                        and aarch64) go to kallsyms, the others to the process, as in
                        mixed stacks.
  With either, a query line is just an ADDRESS (no MODULE); a sanitizer frame still names
  its module. --adjust-vma applies to these addresses too.
  A PID that does not exist (or whose maps cannot be read) and a kallsyms file that cannot
  be used are errors before any output: the message (naming the pid; for a kallsyms whose
  addresses are all 0, explaining kernel.kptr_restrict and how to lift it) goes to stderr
  and the exit code is 1, as perf fails on a bad --pid. A process that exits during the run
  is reported once, its remaining addresses are answered with ??, and the exit code is 1.

STACK DUMPS (--stacks, --folded; not in llvm-symbolizer)
  bpftrace map output with raw stacks (kstack(raw), ustack(raw), or stacks whose frames
  are partly symbolized already), e.g.
      Attaching 1 probe...
      @[
          0xffffffff81234567
          0x7f12345678
      ]: 42
  Each block opens with `@[` or `@NAME[` (also `@[KEY, ` for maps keyed by more than the
  stack) and closes with `]: COUNT` (or `, KEY]: COUNT`). A frame is an address (0x-hex,
  or bare hex of 8 digits or more) or anything else (`do_sys_openat2+5`), which is kept as
  it is. Kernel addresses (top bit set) are looked up in kallsyms when --kernel
  or --kallsyms is given (else kept, with a note on stderr), user addresses in --pid's
  process when --pid is given (else kept). A frame that is not found keeps its address.
  Input is read as a stack dump with --stacks or --folded, or when the first line of an
  input (after blank lines, '#' comments and bpftrace's \"Attaching N probes...\") opens a
  block; such an input is read to its end before anything is printed.
  Default output: the same lines, with each found address replaced by `name+OFFSET`
  (decimal offset, as bpftrace prints symbolized frames; ` [module]` after a kernel
  module's symbol) and everything else (counts, other maps, text) unchanged.
  --output-style, -a, -p and -f do not apply.
  --folded: one line per stack, `outer;...;inner COUNT` (the dump lists the innermost frame
  first, so the frames are reversed), for flamegraph.pl and inferno-flamegraph. Frames
  are function names alone (no offset, no module; `+OFFSET` is dropped from frames that
  came symbolized); frames not found stay addresses. Stacks that come out identical are
  merged, their counts summed, in order of first appearance. Lines outside blocks are
  dropped; a block without a `]: COUNT` line is left out (noted on stderr).
      sudo bpftrace -e 'profile:hz:99 { @[kstack(raw), ustack(raw)] = count(); }' > dump.txt
      stacksym symbolize --kernel --folded --input dump.txt | inferno-flamegraph > flame.svg

NAMES (--find PATTERN; not in llvm-symbolizer)
  Names -> addresses, for probes. --find lists the functions of --obj FILE (or, with --kernel
  or --kallsyms FILE, of kallsyms) whose name matches PATTERN, one line each:
      FILE_OFFSET SIZE NAME
  FILE_OFFSET is what a uprobe takes (perf probe -x FILE -a OFFSET writes FILE:OFFSET to
  /sys/kernel/tracing/uprobe_events); for the kernel it is the address. NAME is demangled
  (as --no-demangle says), with @VERSION / @@VERSION where the symbol has one, [MODULE] for
  a kernel module. PATTERN is a name as the source writes it (ns::Class::method, with or
  without its parameter list; crate::module::function), as the file spells it (mangled), or
  a glob with * and ? ('*readline*'). A stripped file's debug file and MiniDebugInfo are
  searched too. --probe-spec adds, per match, perf probe's and bpftrace's targets:
      perf probe -x 'FILE' -a 0xOFFSET
      uprobe:FILE:MANGLED_NAME      (or uprobe:FILE:0xADDRESS where versions share the name,
                                     and uprobe:FILE:0xOFFSET for a stripped Go binary's
                                     functions, which need bpftrace --unsafe)
  Exit status 1 when nothing matches.

USDT PROBES (--find-usdt PATTERN; not in llvm-symbolizer)
  Lists the static probes (sys/sdt.h, .note.stapsdt) of --obj FILE, or of every file the
  live process --pid PID maps (opened through its root, as for symbolizing), whose
  provider:name matches the glob PATTERN ('python:*', '*:query__start'; a PATTERN without
  ':' matches the name under any provider), one line each:
      FILE_OFFSET provider:name semaphore=FILE_OFFSET|none args=ARGUMENTS
  FILE_OFFSET is where a uprobe attaches; the semaphore's file offset is its ref_ctr_offset.
  With --pid, each line ends with address=ABSOLUTE file=PATH (a file mapped twice: a line
  per mapping). --probe-spec adds bpftrace's probe and the line uprobe_events takes:
      usdt:FILE:provider:name
      p:usdt_PROVIDER/NAME FILE:0xOFFSET(0xREF_CTR_OFFSET) arg1=%di:s32 ...
  --output-style=JSON prints one object per probe: provider, name, file, file_offset,
  address, semaphore_address, semaphore_file_offset, args {raw, parsed, error}.
  Exit status 1 when nothing matches.

DEBUGINFOD
  When the local places have no debug file, the debuginfod servers are asked for it by
  build-id (and for a dwz supplementary file by its own): each --debuginfod URL
  (repeatable), then those of DEBUGINFOD_URLS (space-separated), in order. None given: no
  request is made. --no-debuginfod: none, whatever the environment says. Downloads are
  checked (ELF, the build-id asked for) and kept in DEBUGINFOD_CACHE_PATH (default
  $XDG_CACHE_HOME/debuginfod_client, else ~/.cache/debuginfod_client), the cache gdb and
  debuginfod-find share: <build-id>/debuginfo. A failed lookup is not retried for 600 s (an
  empty file there). DEBUGINFOD_TIMEOUT (seconds without progress, default 90),
  DEBUGINFOD_MAXSIZE (bytes) and DEBUGINFOD_MAXTIME (seconds for a whole download) bound a
  download. A progress bar is drawn on stderr when it is a terminal. Example, serving
  testdata with elfutils' server:
    debuginfod -p 8002 -F testdata/debug &
    stacksym symbolize --debug-file-directory /nonexistent --debuginfod http://127.0.0.1:8002 \\
        -e testdata/bin/c-gcc-O2-g-dwarf4.stripped-buildid 0x12b0

ERRORS
  A module that cannot be read (missing, not ELF, a directory...) is reported once on
  stderr, with its path and the reason, and its addresses are answered with ??; the run
  goes on and exits with 0, as llvm-symbolizer does. A bad flag exits with 1, as in
  llvm-symbolizer. An --input FILE that cannot be read is reported and makes the exit
  code 1 (the other inputs are still read).

BATCHING
  Answers come in input order, but queries are batched: one library call per module and
  batch. A batch ends whenever reading more input would block, so an interactive user (or a
  program driving this through a pipe) gets each answer at once.";
