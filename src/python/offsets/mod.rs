//! Where CPython keeps the fields `python/` reads, per minor version: data, not code.
//!
//! `generated.rs` is written by `gen.sh` beside it, which compiles `offsetof` of each field
//! against that version's own headers (`include/pythonX.Y`, `internal/` included); each
//! offset there carries a comment naming the struct, the field and the header. To re-run:
//! `sh src/python/offsets/gen.sh > src/python/offsets/generated.rs` (needs the pyenv
//! versions 3.6-3.13 and a C compiler). From 3.13 CPython publishes these offsets itself in
//! `_Py_DebugOffsets` at the start of `_PyRuntime`: [`Layout::debug_offsets`] says where in
//! that table each one is, and the reader takes the process's own values from there.

mod generated;

/// The byte offsets of the fields read, of one CPython minor version. `None`: the version
/// has no such field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) minor: u32,
    pub(crate) runtime_interpreters_head: u64,
    pub(crate) interp_next: u64,
    pub(crate) interp_threads_head: u64,
    pub(crate) tstate_next: u64,
    pub(crate) tstate_thread_id: u64,
    pub(crate) tstate_native_thread_id: Option<u64>,
    /// 3.6-3.10: the thread's innermost `PyFrameObject`.
    pub(crate) tstate_frame: Option<u64>,
    /// 3.11-3.12: the thread's `_PyCFrame`, whose `current_frame` is the innermost frame.
    pub(crate) tstate_cframe: Option<u64>,
    pub(crate) cframe_current_frame: Option<u64>,
    /// 3.13: the innermost `_PyInterpreterFrame`.
    pub(crate) tstate_current_frame: Option<u64>,
    pub(crate) frame_back: Option<u64>,
    pub(crate) frame_code: Option<u64>,
    pub(crate) frame_lasti: Option<u64>,
    pub(crate) iframe_previous: Option<u64>,
    pub(crate) iframe_code: Option<u64>,
    pub(crate) iframe_instr: Option<u64>,
    pub(crate) iframe_owner: Option<u64>,
    pub(crate) iframe_is_entry: Option<u64>,
    pub(crate) code_filename: u64,
    pub(crate) code_name: u64,
    pub(crate) code_qualname: Option<u64>,
    pub(crate) code_firstlineno: u64,
    /// `co_lnotab` before 3.10, `co_linetable` from 3.10 (a different format each).
    pub(crate) code_linetable: u64,
    pub(crate) code_code_adaptive: Option<u64>,
    pub(crate) code_firsttraceable: Option<u64>,
    pub(crate) object_type: u64,
    pub(crate) var_size: u64,
    pub(crate) bytes_sval: u64,
    pub(crate) unicode_length: u64,
    pub(crate) unicode_state: u64,
    pub(crate) unicode_ascii_size: u64,
    pub(crate) unicode_compact_size: u64,
    pub(crate) debug_offsets: Option<DebugOffsetsLayout>,
}

/// Where in `_Py_DebugOffsets` (3.13+) each offset the reader uses is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DebugOffsetsLayout {
    pub(crate) version: u64,
    pub(crate) runtime_interpreters_head: u64,
    pub(crate) interp_next: u64,
    pub(crate) interp_threads_head: u64,
    pub(crate) tstate_next: u64,
    pub(crate) tstate_current_frame: u64,
    pub(crate) tstate_thread_id: u64,
    pub(crate) tstate_native_thread_id: u64,
    pub(crate) iframe_previous: u64,
    pub(crate) iframe_code: u64,
    pub(crate) iframe_instr: u64,
    pub(crate) iframe_owner: u64,
    pub(crate) code_filename: u64,
    pub(crate) code_name: u64,
    pub(crate) code_qualname: u64,
    pub(crate) code_linetable: u64,
    pub(crate) code_firstlineno: u64,
    pub(crate) code_code_adaptive: u64,
}

/// The layout of CPython 3.`minor`, if it is one this crate has a table for.
pub(crate) fn layout(minor: u32) -> Option<&'static Layout> {
    [
        &generated::V3_6,
        &generated::V3_7,
        &generated::V3_8,
        &generated::V3_9,
        &generated::V3_10,
        &generated::V3_11,
        &generated::V3_12,
        &generated::V3_13,
    ]
    .into_iter()
    .find(|layout| layout.minor == minor)
}

/// The oldest and newest minor versions of 3.x with a table.
pub(crate) const SUPPORTED: (u32, u32) = (6, 13);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_supported_version_has_its_table() {
        for minor in SUPPORTED.0..=SUPPORTED.1 {
            assert_eq!(layout(minor).map(|l| l.minor), Some(minor));
        }
        assert!(layout(5).is_none());
        assert!(layout(14).is_none());
    }
}
