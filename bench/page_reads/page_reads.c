/*
 * page_reads: the time PostgreSQL takes to read pages of a relation in shared buffers at
 * random, one after another, as a search that follows pointers to scattered pages must:
 * for each page a pin (through the buffer this backend last found it in, the cheapest way
 * PostgreSQL offers), a share lock, one 32-byte code read at a random place, unlock, unpin.
 * bench/wide_size_floor.sh compares it with a lookup of the hamming index. A measuring
 * tool for benchmarks only: superuser, never installed by the README's commands.
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/rel.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(page_reads);

/* xorshift64: the same blocks on every run */
static uint64
next_random(uint64 *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* the relation's file, as ReadRecentBuffer names it (renamed in 16) */
#if PG_VERSION_NUM < 160000
#define RELATION_FILE(rel) ((rel)->rd_node)
#else
#define RELATION_FILE(rel) ((rel)->rd_locator)
#endif

static Buffer
read_page(Relation rel, BlockNumber block, Buffer *recent)
{
	if (recent[block] == InvalidBuffer ||
		!ReadRecentBuffer(RELATION_FILE(rel), MAIN_FORKNUM, block, recent[block]))
		recent[block] = ReadBufferExtended(rel, MAIN_FORKNUM, block, RBM_NORMAL, NULL);
	return recent[block];
}

/*
 * page_reads(rel regclass, pages int, within int, rounds int) returns float8[]: reads blocks
 * 1 to within - 1 once in order (each page in this backend's page tables and buffer hints,
 * as in a pooled session), then `rounds` times `pages` random blocks among them; the
 * milliseconds of the first pass, then of each round.
 */
Datum
page_reads(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	int32		pages = PG_GETARG_INT32(1);
	int32		rounds = PG_GETARG_INT32(3);
	Relation	rel = relation_open(relid, AccessShareLock);
	BlockNumber within = Min((BlockNumber) PG_GETARG_INT32(2), RelationGetNumberOfBlocks(rel));
	Buffer	   *recent;
	Datum	   *ms;
	uint64		state = UINT64CONST(0x9E3779B97F4A7C15);
	uint64		sum = 0;
	instr_time	start,
				took;

	if (pages < 1 || rounds < 1 || within < 2)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("page_reads needs pages and rounds of at least 1 and a relation of 2 blocks")));
	recent = palloc0(sizeof(Buffer) * within);
	ms = palloc(sizeof(Datum) * (rounds + 1));
	for (int r = 0; r <= rounds; r++)
	{
		INSTR_TIME_SET_CURRENT(start);
		for (int32 i = 0; i < (r == 0 ? (int32) within - 1 : pages); i++)
		{
			BlockNumber block = r == 0 ? i + 1 : 1 + next_random(&state) % (within - 1);
			Size		at = MAXALIGN(SizeOfPageHeaderData) + next_random(&state) % 200 * 32;
			Buffer		buffer;
			uint64		code[4];

			CHECK_FOR_INTERRUPTS();
			buffer = read_page(rel, block, recent);
			LockBuffer(buffer, BUFFER_LOCK_SHARE);
			memcpy(code, (char *) BufferGetPage(buffer) + at, sizeof(code));
			sum += pg_popcount((char *) code, sizeof(code));
			UnlockReleaseBuffer(buffer);
		}
		INSTR_TIME_SET_CURRENT(took);
		INSTR_TIME_SUBTRACT(took, start);
		ms[r] = Float8GetDatum(INSTR_TIME_GET_MILLISEC(took));
	}
	relation_close(rel, AccessShareLock);
	/* the bits read, so that the reads are not optimised away */
	elog(DEBUG1, "page_reads: %llu bits set", (unsigned long long) sum);
	PG_RETURN_ARRAYTYPE_P(construct_array(ms, rounds + 1, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}
