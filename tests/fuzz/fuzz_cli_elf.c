// SPDX-License-Identifier: MIT
/*
 * fuzz_cli_elf.c - the command's ELF reader (lib/symbols/symbols.c,
 * elf.c) on arbitrary bytes: each input is the file a mapping
 * names (a memfd, /proc/self/fd/N), its frames looked up at a few file
 * offsets as dial9 sched --explain and dial9 flame do; the vDSO path
 * reads the same bytes from memory.
 */
#include <string.h>

#include "cli_fuzz.h"
#include "sched/sched_stacks.h"
#include "symbols/symbols.h"
#include "symbols/elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint64_t offs[] = { 0, 0x40, 0x100, 0x1000, size / 2, size };
	struct sched_mapping m = { .start = 0x10000, .end = 0x10000000 };
	struct sched_frame f = { .pid = 1, .m = &m };
	struct sym_table t = { 0 };
	struct sym_elf_info info;
	struct d9_syms s;
	char path[64];
	const char *why;
	int fd = memfd_create("elf", MFD_CLOEXEC);

	if (fd < 0)
		abort();
	cli_fuzz_write(fd, data, size);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	m.path = path;
	/* as the recorded build-id, some bytes of the input */
	m.build_id_len = size > 64 && (data[0] & 1) ? 20 : 0;
	if (m.build_id_len)
		memcpy(m.build_id, data + 44, 20);
	d9_syms_init(&s);
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		const char *name, *obj = NULL;
		uint64_t within;

		f.off = offs[i];
		if (!d9_syms_lookup(&s, &f, &name, &within, &obj) &&
		    !strlen(name))
			abort();
	}
	d9_syms_free(&s);
	/* an image in memory, as the vDSO is read */
	if (d9_sym_elf_read(&t, -1, data, size, SYM_LOADS | SYM_SYMTAB |
			 SYM_DYNSYM, &info, &why) < 0)
		abort();
	d9_sym_table_free(&t);
	close(fd);
	return 0;
}
