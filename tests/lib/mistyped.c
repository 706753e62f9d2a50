// SPDX-License-Identifier: MIT
/*
 * mistyped.c - compiled by tests/lib/mistyped.sh: CASE 0 (every correct
 * use) must compile, each other CASE (a value that is not a struct
 * dial9_value) must not.
 */
#include "dial9.h"

DIAL9_EVENT_TYPE(ev, "t.ev", DIAL9_FIELD(U64, n));
DIAL9_EVENT_TYPE(none, "t.none");
DIAL9_EVENT_TYPE(mixed, "t.mixed", DIAL9_FIELD(U64, a), DIAL9_FIELD(STR, b),
		 DIAL9_FIELD(BYTES, c), DIAL9_FIELD(ISTR, d),
		 DIAL9_FIELD(I64, e), DIAL9_FIELD(F64, f), DIAL9_FIELD(BOOL, g));
DIAL9_SPAN_TYPE(sp, "t.span", DIAL9_FIELD(U64, rows));

void use(unsigned int k, const struct dial9_value *given);

void use(unsigned int k, const struct dial9_value *given)
{
#if CASE == 0
	struct dial9_value v = dial9_u64(k);
	const struct dial9_value cv = dial9_u64(k);

	DIAL9_EMIT(ev, dial9_u64(k));
	DIAL9_EMIT(ev, v);
	DIAL9_EMIT(ev, cv);
	DIAL9_EMIT(ev, *given);
	DIAL9_EMIT(none);
	DIAL9_EMIT(mixed, dial9_u64(1), dial9_str("a,b"), dial9_bytes("x", 1),
		   dial9_istr("i"), dial9_i64(-1), dial9_f64(0.5),
		   dial9_bool(k > 1));
	DIAL9_SPAN_BEGIN(sp, dial9_u64(k));
	DIAL9_SPAN_END(sp, dial9_u64(k));
	/* 32 values, the most one call takes (dropped: ev has one field) */
	DIAL9_EMIT(ev, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v,
		   v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v);
#elif CASE == 1
	DIAL9_EMIT(ev, 1);
#elif CASE == 2
	DIAL9_EMIT(ev, k);
#elif CASE == 3
	DIAL9_EMIT(mixed, dial9_u64(1), "a", dial9_bytes("x", 1),
		   dial9_istr("i"), dial9_i64(-1), dial9_f64(0.5), dial9_bool(1));
#elif CASE == 4
	DIAL9_SPAN_BEGIN(sp, 2.0);
#elif CASE == 5
	DIAL9_SPAN_END(sp, given);
#elif CASE == 6
	DIAL9_EMIT(ev, dial9_u64(k), 7);
#endif
	(void)k;
	(void)given;
}
