// SPDX-License-Identifier: MIT
/* error.c - names for errors, field types and event kinds. */
#include <errno.h>
#include <string.h>

#include "dial9.h"

const char *dial9_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -EBADMSG:
		return "corrupt trace data";
	case -ENODATA:
		return "truncated trace data";
	case -EPROTONOSUPPORT:
		return "unsupported trace format version";
	case -EBUSY:
		return "a recorder is already running in this process";
	}
	return strerror(err < 0 ? -err : err);
}

const char *dial9_type_name(uint8_t type)
{
	switch (type) {
	case DIAL9_U64:
		return "u64";
	case DIAL9_I64:
		return "i64";
	case DIAL9_BOOL:
		return "bool";
	case DIAL9_ISTR:
		return "istr";
	case DIAL9_F64:
		return "f64";
	case DIAL9_STR:
		return "str";
	case DIAL9_BYTES:
		return "bytes";
	}
	return "unknown";
}

const char *dial9_kind_name(uint8_t kind)
{
	switch (kind) {
	case DIAL9_KIND_INSTANT:
		return "instant";
	case DIAL9_KIND_SPAN_BEGIN:
		return "span_begin";
	case DIAL9_KIND_SPAN_END:
		return "span_end";
	case DIAL9_KIND_COUNTER:
		return "counter";
	case DIAL9_KIND_GAUGE:
		return "gauge";
	case DIAL9_KIND_INTERNAL:
		return "internal";
	}
	return "unknown";
}
