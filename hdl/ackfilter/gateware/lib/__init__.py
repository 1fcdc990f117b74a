"""Small gateware building blocks shared by the blocks: stream records
(:mod:`.stream`), priority encoders (:mod:`.prio`), the free list and data ring
buffer pool (:mod:`.buffer_pool`)."""
