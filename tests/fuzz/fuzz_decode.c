// SPDX-License-Identifier: MIT
/* fuzz_decode.c - arbitrary bytes never crash or hang the decoder. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dial9.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dial9_decoder *d;
	struct dial9_record r;
	uint64_t steps = 0;
	int ret;

	if (dial9_decoder_new(&d, data, size))
		return 0;
	while ((ret = dial9_decoder_next(d, &r)) == 1) {
		/* every frame consumes input: at most one record per byte */
		if (++steps > size + 1)
			abort();
		if (r.kind == DIAL9_RECORD_EVENT) {
			for (uint32_t i = 0; i < r.schema->nfields; i++) {
				const struct dial9_value *v = &r.values[i];

				if (dial9_record_field(&r, r.schema->fields[i].name) == NULL)
					abort();
				if ((v->type == DIAL9_STR || v->type == DIAL9_ISTR ||
				     v->type == DIAL9_BYTES) && v->str.len &&
				    ((const uint8_t *)v->str.ptr < data ||
				     (const uint8_t *)v->str.ptr + v->str.len > data + size))
					abort();
			}
		}
		if (r.kind == DIAL9_RECORD_METADATA)
			for (unsigned int i = 0; i < r.nkv; i++)
				if (r.kv[i].key_len > size || r.kv[i].value_len > size)
					abort();
	}
	if (ret != 0 && ret != -EBADMSG && ret != -ENODATA &&
	    ret != -EPROTONOSUPPORT && ret != -ENOMEM)
		abort();
	if (dial9_decoder_offset(d) > size)
		abort();
	/* errors are sticky */
	if (ret < 0 && dial9_decoder_next(d, &r) != ret)
		abort();
	dial9_decoder_free(d);
	return 0;
}
