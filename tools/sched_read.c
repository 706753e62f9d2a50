// SPDX-License-Identifier: MIT
/* sched_read.c - sched.* events of a trace fed to sched_stats. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/dial9.h>

#include "sched_read.h"

uint64_t sched_fu64(const struct dial9_record *r, int i)
{
	return i >= 0 && r->values[i].type == DIAL9_U64 ? r->values[i].u64 : 0;
}

bool sched_fbool(const struct dial9_record *r, int i)
{
	return i >= 0 && r->values[i].type == DIAL9_BOOL && r->values[i].b;
}

void sched_fields_lookup(struct sched_fields *f, const struct dial9_schema *s)
{
	static const struct {
		const char *name;
		int kind;
	} names[] = {
		{ "sched.switch_out", SK_OUT }, { "sched.switch_in", SK_IN },
		{ "sched.waking", SK_WAKING }, { "sched.migrate", SK_MIGRATE },
		{ "sched.exit", SK_EXIT }, { "sched.comm", SK_COMM },
		{ "sched.lost", SK_LOST }, { "sched.schedstat", SK_SSTAT },
		{ "sched.unfollowed", SK_UNFOLLOWED },
		{ "dial9.lost", SK_APP_LOST },
	};

	memset(f, 0, sizeof(*f));
	f->schema = s;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s->name, names[i].name))
			f->kind = names[i].kind;
	f->tid = dial9_schema_field_index(s, "tid");
	f->pid = dial9_schema_field_index(s, "pid");
	f->cpu = dial9_schema_field_index(s, "cpu");
	f->preempted = dial9_schema_field_index(s, "preempted");
	f->state = dial9_schema_field_index(s, "state");
	f->wait = dial9_schema_field_index(s, "runq_delay_ns");
	f->known = dial9_schema_field_index(s, "delay_known");
	f->totals = dial9_schema_field_index(s, "totals_known");
	f->rtotal = dial9_schema_field_index(s, "runq_total_ns");
	f->rcount = dial9_schema_field_index(s, "runq_count");
	f->name = dial9_schema_field_index(s, "name");
	f->count = dial9_schema_field_index(s, "count");
	f->run = dial9_schema_field_index(s, "run_ns");
	f->slices = dial9_schema_field_index(s, "timeslices");
	f->parent = dial9_schema_field_index(s, "parent_pid");
	f->pexec = dial9_schema_field_index(s, "privileged_exec");
	f->waker = dial9_schema_field_index(s, "waker_tid");
	f->events = dial9_schema_field_index(s, "events");
}

void sched_fields_ev(const struct sched_fields *f,
		     const struct dial9_record *r, uint32_t src,
		     struct sched_ev *e)
{
	memset(e, 0, sizeof(*e));
	e->ts = r->ts_ns;
	e->src = src;
	e->tid = (uint32_t)sched_fu64(r, f->tid);
	e->tgid = (uint32_t)sched_fu64(r, f->pid);
	e->cpu = f->cpu >= 0 ? (uint32_t)sched_fu64(r, f->cpu) : UINT32_MAX;
	if (f->kind == SK_OUT) {
		e->runnable = sched_fbool(r, f->preempted);
		e->dead = f->state >= 0 &&
			  sched_fu64(r, f->state) == DIAL9_STATE_DEAD;
	} else {
		e->wait_known = sched_fbool(r, f->known);
		e->wait_ns = sched_fu64(r, f->wait);
	}
	e->totals = sched_fbool(r, f->totals);
	if (e->totals) {
		e->runq_total = sched_fu64(r, f->rtotal);
		e->runq_count = (uint32_t)sched_fu64(r, f->rcount);
	}
}

static char *kv_dup(const struct dial9_record *r, const char *key)
{
	size_t kl = strlen(key);

	for (unsigned int i = 0; i < r->nkv; i++)
		if (r->kv[i].key_len == kl && !memcmp(r->kv[i].key, key, kl))
			return strndup(r->kv[i].value, r->kv[i].value_len);
	return NULL;
}

int sched_meta_source(struct sched_stats *st, const struct dial9_record *r)
{
	char *host = kv_dup(r, "host"), *boot = kv_dup(r, "boot_id");
	int ret = sched_stats_source(st, host, boot);

	free(host);
	free(boot);
	return ret;
}

int sched_feed(struct sched_stats *st, const struct sched_fields *f,
	       const struct dial9_record *r, uint32_t src)
{
	uint32_t tid = (uint32_t)sched_fu64(r, f->tid);
	uint32_t pid = (uint32_t)sched_fu64(r, f->pid);
	struct sched_ev e;

	switch (f->kind) {
	case SK_OUT:
	case SK_IN:
		sched_fields_ev(f, r, src, &e);
		return f->kind == SK_OUT ? sched_stats_out(st, &e, NULL) :
					   sched_stats_in(st, &e, NULL);
	case SK_WAKING:
		return f->cpu >= 0 ? sched_stats_cpu_seen(st, src,
			(uint32_t)sched_fu64(r, f->cpu), r->ts_ns) : 0;
	case SK_MIGRATE:
		sched_stats_migrate(st, src, tid, pid);
		return 0;
	case SK_COMM:
		if (f->name >= 0 && (r->values[f->name].type == DIAL9_ISTR ||
				     r->values[f->name].type == DIAL9_STR))
			sched_stats_name(st, src, r->ts_ns, tid, pid,
					 r->values[f->name].str.ptr,
					 r->values[f->name].str.len);
		return 0;
	case SK_LOST:
		return sched_stats_lost(st, src, r->ts_ns,
					(uint32_t)sched_fu64(r, f->cpu),
					sched_fu64(r, f->count));
	case SK_UNFOLLOWED:
		return sched_stats_unfollowed(st, src, pid,
				(uint32_t)sched_fu64(r, f->parent),
				f->pexec >= 0 && sched_fbool(r, f->pexec));
	case SK_APP_LOST:
		st->lost_app += sched_fu64(r, f->events);
		return 0;
	case SK_SSTAT:
		sched_stats_sample(st, src, r->ts_ns, tid, pid,
				   sched_fu64(r, f->run), sched_fu64(r, f->wait),
				   sched_fu64(r, f->slices));
		return 0;
	}
	return 0;
}
