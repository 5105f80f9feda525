"""Each bucket slot is a row-major view of the flat buffer (view_as), where torch's has the parameter's strides (as_strided): a transposed parameter sits in the buffer in another order, which a comm hook sees."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("self.buckets.append(Bucket(bucket_index, list(indices), buffer, slots(buffer, params, offsets)))",
                    "self.buckets.append(Bucket(bucket_index, list(indices), buffer,\n"
                    "                                       [buffer[o:o + p.numel()].view_as(p) for p, o in zip(params, offsets)]))")]}
VIOLATES = "C1"
CAUGHT_BY = {"3.11": "row-major order"}
