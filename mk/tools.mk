# Shared by the Makefiles that build BPF objects and user programs: the
# target triplet (for the multiarch headers BPF objects include), the BPF
# target architecture, and quiet output unless V=1.
ARCH_TRIPLET := $(shell $(CC) -dumpmachine 2>/dev/null)
BPF_ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif
