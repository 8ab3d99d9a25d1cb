/* SPDX-License-Identifier: MIT */
/* gdb_script.S - gdb/attach.py as the NUL-terminated string
 * mwi_gdb_attach_py (gdb.c), so that the script is a file of its own
 * and mwrap-inject still one binary.  The path is relative to the
 * top directory, where make runs the compiler. */
	.section .rodata
	.globl mwi_gdb_attach_py
	.type mwi_gdb_attach_py, @object
mwi_gdb_attach_py:
	.incbin "inject/backends/gdb/attach.py"
	.byte 0
	.size mwi_gdb_attach_py, . - mwi_gdb_attach_py
	.section .note.GNU-stack, "", @progbits
