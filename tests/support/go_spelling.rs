//! How the Go table spells a function that `.symtab` names (shared by tests/gopclntab.rs
//! and benches/go.rs).

/// A `.symtab` name as the Go table spells the same function: assembler functions carry
/// their ABI in `.symtab` (`internal/cpu.cpuid.abi0`), and a generic function's instances
/// name their shapes there (`main.Sum[go.shape.int_0]`) where the table, as the runtime's
/// tracebacks, says `main.Sum[...]`.
pub fn go_spelling(symtab_name: &str) -> String {
    let name = symtab_name
        .strip_suffix(".abi0")
        .or_else(|| symtab_name.strip_suffix(".abiinternal"))
        .unwrap_or(symtab_name);
    let mut out = String::new();
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '[' => {
                if depth == 0 {
                    out.push_str("[...]");
                }
                depth += 1;
            }
            ']' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}
