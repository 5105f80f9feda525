"""Broadcasts name the source by its rank in the group (group_src=0) and ask the group for its size."""
from autograder.selftest.kinds import DDP, REDUCER

EDITS = {
    DDP: [("dist.broadcast(flat, src=dist.get_global_rank(process_group, src) if process_group else src,\n"
           "                       group=process_group)",
           "dist.broadcast(flat, group=process_group, group_src=src)")],
    REDUCER: [("        self.world_size = dist.get_world_size(process_group)\n",
               "        self.world_size = (process_group or dist.group.WORLD).size()\n")],
}
