// trust.hpp - is a file or directory safe for slurmctld to trust?
//
// slurmctld runs as root or SlurmUser: a gpupool.conf or state directory
// that anybody else can write would let that user choose the policy (give
// a QOS the top tier) or plant state.  Plain POSIX calls, no Slurm.
#ifndef GPUPOOL_TRUST_HPP
#define GPUPOOL_TRUST_HPP

#include <sys/types.h>

#include <string>

namespace gpupool {

// Empty if `path` may be trusted, else why not, naming the path, the owner
// or mode at fault and `what` it is (e.g. "gpupool.conf").  Trusted: the
// path (symlinks resolved) is a regular file (`is_dir` false) or a
// directory owned by root or `slurm_uid` and writable by neither group nor
// others; and so is every directory above it, except that a directory with
// the sticky bit (/tmp) may be writable by all, since only an entry's
// owner can then rename or remove it.  Group write is refused even for
// group root or SlurmUser's group: a member of a group is not root.
// Each symbolic link on the way (the path itself, a directory on it, a
// link to a link) must also be owned by root or `slurm_uid`, with every
// directory above it trusted as above: whoever may write there could
// re-point the link.
// *io_error (if given) is set when the path could not be examined at all.
std::string check_trusted_path(const std::string &path, const std::string &what,
                               uid_t slurm_uid, bool is_dir,
                               bool *io_error = nullptr);

// The same check without a window between checking and using: every
// component of the resolved path is opened once, from "/" down, without
// following symlinks, and judged by fstat of what was opened; on success
// *fd is the open file (read-only, non-blocking; a directory: O_PATH) that
// passed, for the caller to read and close.  A file renamed into place
// after the check is never the one read.  *fd is -1 on failure.
std::string open_trusted_path(const std::string &path, const std::string &what,
                              uid_t slurm_uid, bool is_dir, int *fd,
                              bool *io_error = nullptr);

}  // namespace gpupool

#endif
