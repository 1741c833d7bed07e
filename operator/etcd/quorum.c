/* Quorum arithmetic (quorum.h). */
#include "quorum.h"

size_t etcd_quorum(size_t voters)
{
        return voters / 2 + 1;
}

bool etcd_quorum_holds(size_t voters, size_t up)
{
        return up >= etcd_quorum(voters);
}

int etcd_quorum_fault_tolerance(size_t voters, size_t up)
{
        return (int) up - (int) etcd_quorum(voters);
}
