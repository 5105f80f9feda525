"""The forward's buffer broadcast reuses one flat tensor per (dtype, device) made in the constructor, with its views: copy in, broadcast, copy back."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [
    ("        self.reducer = Reducer(self.params, bucket_indices, process_group)\n",
     """        self.reducer = Reducer(self.params, bucket_indices, process_group)
        # Like a gradient bucket: the forward's broadcast gets one flat tensor per (dtype, device) group of
        # buffers, allocated once here, and a view of it per buffer.
        self.buffer_flats: list[tuple[list[torch.Tensor], torch.Tensor, list[torch.Tensor]]] = []
        if broadcast_buffers:
            groups: dict[tuple, list[torch.Tensor]] = {}
            for buffer in self.module_buffers:
                groups.setdefault((buffer.dtype, buffer.device), []).append(buffer)
            for group in groups.values():
                flat = torch.empty(sum(b.numel() for b in group), dtype=group[0].dtype, device=group[0].device)
                views, offset = [], 0
                for buffer in group:
                    views.append(flat[offset:offset + buffer.numel()].view_as(buffer))
                    offset += buffer.numel()
                self.buffer_flats.append((group, flat, views))
"""),
    ("            broadcast_tensors(self.module_buffers, self.process_group)\n",
     "            self._broadcast_module_buffers()\n"),
    ("    @contextlib.contextmanager\n    def no_sync(self)",
     '''    def _broadcast_module_buffers(self) -> None:
        """Rank 0's buffers to every rank, through the flat tensors made in the constructor."""
        src = dist.get_global_rank(self.process_group, 0) if self.process_group is not None else 0
        with torch.no_grad():
            for buffers, flat, views in self.buffer_flats:
                if dist.get_rank(self.process_group) == 0:  # only the source's values are sent
                    torch._foreach_copy_(views, [b.detach() for b in buffers])
                dist.broadcast(flat, src=src, group=self.process_group)
                torch._foreach_copy_(buffers, views)

    @contextlib.contextmanager
    def no_sync(self)'''),
]}
