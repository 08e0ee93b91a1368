"""The KernelBench worker's share of src/verdict/worker_plan.h, the workers' pure decisions: the
Range Profiler session's capacity (max_kernels), the most kernel launches one collection
profiles. CUPTI sizes the counter data image by it and every collection starts from a fresh
copy of that image, so a session starts small and grows to what the forwards it profiles
launch. A plain test holds these equal to the C++ ones."""

import os

FIRST_RANGE_CAPACITY = 16   # kFirstRangeCapacity
MOST_RANGE_CAPACITY = 256   # kMostRangeCapacity


def grown_range_capacity(capacity, launches, dropped):
    """grown_range_capacity: the capacity a session of `capacity` grows to after a collection
    dropped `dropped` launches, doubled until it holds the call's launches (`launches` from the
    launch callback, -1 without names; at least capacity + dropped), at most MOST_RANGE_CAPACITY;
    `capacity` itself when nothing was dropped or it is already at the most."""
    capacity = max(1, int(capacity))
    if dropped <= 0:
        return capacity
    launches = max(launches, capacity + dropped)
    if launches <= capacity or capacity >= MOST_RANGE_CAPACITY:
        return capacity
    grown = capacity
    while grown < launches and grown < MOST_RANGE_CAPACITY:
        grown *= 2
    return min(grown, MOST_RANGE_CAPACITY)


def first_range_capacity():
    """FIRST_RANGE_CAPACITY, or KP_RP_CAPACITY=N (at most the most) as kp-worker reads it."""
    try:
        n = int(os.environ.get("KP_RP_CAPACITY", "0"))
    except ValueError:
        n = 0
    return min(n, MOST_RANGE_CAPACITY) if n > 0 else FIRST_RANGE_CAPACITY
