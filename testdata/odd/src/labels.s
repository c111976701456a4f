# Test source for testdata/build-odd.sh (odd/odd-labels): hand-written symbols
# whose choice elfutils' addr2line tests check (its testfile34, testfile49,
# testfile64 have these shapes), laid out at fixed offsets from .text's start.
	.text
	.globl	lab_start
lab_start:
	nop			# +0x0
# A sized global with two sized symbols nested in it, then code of its own
# again (+0x5..+0xa): the outer one answers there.
	.globl	outer
outer:
	nop			# +0x1
	nop
	.globl	inner_global
inner_global:
	nop			# +0x3
	nop
	.size	inner_global, . - inner_global
inner_local:
	nop			# +0x5
	nop
	.size	inner_local, . - inner_local
	nop			# +0x7
	nop
	nop
	nop
	.size	outer, . - outer
	nop			# +0xb: past outer
# Two global labels without a size at one address (+0xc), then a weak and a
# local pair: the later of each pair answers.
	.globl	sizeless_first
	.globl	sizeless_second
sizeless_first:
sizeless_second:
	nop			# +0xc
	nop
	.weak	weak_first
	.weak	weak_second
weak_first:
weak_second:
	nop			# +0xe
	nop
local_first:
local_second:
	nop			# +0x10
	nop
	ret

# Labels of hand-written data: no type, no size.
	.data
data_first:
	.long	1
data_second:
	.long	2
