/* Quorum arithmetic: the one place the product counts a majority. The view
 * (view.h), the node tools (member-remove, the installer's restart guard)
 * and the controllers count voters and members that are up their own way
 * (from a view snapshot, from a member list and /health answers) and ask
 * here what those numbers allow. Learners never count: they do not vote. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Voters a cluster of `voters` needs up to make progress: a majority,
 * voters / 2 + 1 (1 for none, so an empty list never "has quorum"). */
size_t etcd_quorum(size_t voters);

/* Do `up` voters serving out of `voters` make a quorum? */
bool etcd_quorum_holds(size_t voters, size_t up);

/* Healthy voters beyond quorum: how many more may fail before it is lost
 * (negative when it is lost already). */
int etcd_quorum_fault_tolerance(size_t voters, size_t up);
