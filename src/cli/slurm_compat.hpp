// slurm_compat.hpp - where libslurm's public API (slurm/slurm.h,
// slurm/slurmdb.h) differs between the Slurm releases the gpupool command
// is built against (22.05, 23.11, 24.11, 25.11, 26.05), keyed on
// SLURM_VERSION_NUMBER.  The command's other files contain no #if on the
// Slurm version.  The plugins' differences (slurmctld's internals) are in
// src/plugins/common/gpupool_compat.h; doc/slurm-releases.md says where
// each one comes from.
#pragma once

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurmdb.h>

#include <cerrno>
#include <cstdint>

#define GPC_SLURM_AT_LEAST(maj, min) (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(maj, min, 0))

// Exported by libslurm (src/common), not declared in slurm.h.
extern "C" {
int32_t slurm_bit_set_count(bitstr_t *b);
bitstr_t slurm_bit_size(bitstr_t *b);  // bitoff_t: bitstr_t on every release
int slurm_bit_test(bitstr_t *b, bitstr_t bit);
char *slurm_job_state_string(uint32_t inx);
#if GPC_SLURM_AT_LEAST(24, 11)
const char *slurm_job_state_reason_string(enum job_state_reason inx);
#else
char *slurm_job_reason_string(enum job_state_reason inx);
#endif
}

namespace gpupool::cli::compat {

// 26.05's cons_tres places a job capped at one node by Weight alone, without
// LLN (_get_one_res): Snapshot::one_node_by_weight.
constexpr bool kOneNodeByWeight = GPC_SLURM_AT_LEAST(26, 5);

// SelectTypeParameters' memory bit: CR_MEMORY, an enum's SELECT_MEMORY
// since it was renamed.
#ifdef CR_MEMORY
constexpr uint16_t kSelectMemory = CR_MEMORY;
#else
constexpr uint16_t kSelectMemory = SELECT_MEMORY;
#endif

// Slurm gives a GPU with shards or MPS in use to no job asking for whole
// GPUs since 23.11.5 (before, both may hold it): such GPUs are not free.
constexpr bool kSharedGresHoldsGpus = SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 5);

// A reservation of GRES holds some of its nodes (not whole), 23.02 and later.
#ifdef RESERVE_FLAG_GRES_REQ
constexpr uint64_t kReserveGres = RESERVE_FLAG_GRES_REQ;
#else
constexpr uint64_t kReserveGres = 0;
#endif

// List / ListIterator until 23.11; list_t / list_itr_t since (both in 23.11).
#if GPC_SLURM_AT_LEAST(23, 11)
using list_ptr = list_t *;
using list_itr_ptr = list_itr_t *;
#else
using list_ptr = List;
using list_itr_ptr = ListIterator;
#endif

// The error of the last libslurm call: slurm_get_errno() is gone in 24.11.
inline int slurm_errno() {
#if GPC_SLURM_AT_LEAST(24, 11)
    return errno;
#else
    return slurm_get_errno();
#endif
}

// slurm_free_ctl_conf() is slurm_free_conf() since 26.05.
inline void free_ctl_conf(slurm_conf_t *c) {
#if GPC_SLURM_AT_LEAST(26, 5)
    slurm_free_conf(c);
#else
    slurm_free_ctl_conf(c);
#endif
}

// job_reason_string() is job_state_reason_string() since 24.11.
inline const char *job_reason_string(enum job_state_reason r) {
#if GPC_SLURM_AT_LEAST(24, 11)
    return slurm_job_state_reason_string(r);
#else
    return slurm_job_reason_string(r);
#endif
}

}  // namespace gpupool::cli::compat
