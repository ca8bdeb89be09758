"""Type hints of the extension module ``lumos._lumos`` (crates/python).

These are the building blocks of the documented API in ``lumos``; use
that instead. Paths are ``str`` or ``os.PathLike``; ``progress`` is
``None`` or ``callback(phase: str, done: int, total: int)``.
"""

from os import PathLike
from typing import Callable, List, Optional, Sequence, Tuple, Union

_Path = Union[str, "PathLike[str]"]
_Progress = Optional[Callable[[str, int, int], object]]
#: ``(rows, [(name, type, data, validity)])``: type ``f64``, ``i64``,
#: ``bool`` or ``str``; data ``bytes`` in Arrow's layout (a list for
#: ``str``); validity an LSB-first bitmap or ``None``.
RawTable = Tuple[int, List[Tuple[str, str, object, Optional[bytes]]]]

class Trace:
    """One trace file, read."""

    @property
    def path(self) -> str: ...
    @property
    def rank(self) -> int: ...
    @property
    def world_size(self) -> Optional[int]: ...
    @property
    def events(self) -> int: ...
    def inspect_json(self) -> str: ...
    def replay(self, options: ReplayOptions) -> ReplayResult: ...

class Job:
    """The ranks of one job, read, built and assembled."""

    @property
    def ranks(self) -> List[int]: ...
    @property
    def world_size(self) -> Optional[int]: ...
    @property
    def missing_ranks(self) -> List[int]: ...
    @property
    def paths(self) -> List[str]: ...
    def programs(self) -> List[List[int]]: ...
    def report_json(self) -> str: ...
    def replay(self, options: ReplayOptions) -> ReplayResult: ...

class ReplayOptions:
    """Checked replay options; a bad value raises ``lumos.ConfigError``."""

    def __init__(
        self,
        deps: Sequence[str] = ...,
        scale_kernels: Optional[object] = ...,
        scale_only: str = ...,
        scale_pattern: Optional[str] = ...,
        scale_rank: Sequence[Tuple[object, object]] = ...,
        scale_rank_cpu: bool = ...,
        kernel_scales: Sequence[str] = ...,
    ) -> None: ...

class PredictOptions:
    """A checked prediction target; a bad value raises ``lumos.ConfigError``."""

    def __init__(
        self,
        dp: Optional[int] = ...,
        pp: Optional[int] = ...,
        microbatches: Optional[int] = ...,
        layers: Optional[int] = ...,
        hidden: Optional[int] = ...,
        ffn: Optional[int] = ...,
        tp: Optional[int] = ...,
        scale_kernels: Sequence[str] = ...,
        network: Optional[str] = ...,
        virtual_stages: Optional[int] = ...,
        micro_batch: Optional[int] = ...,
        heads: Optional[int] = ...,
    ) -> None: ...

class SynthRecipe:
    """A checked training recipe of ``synth``; a bad name raises ``lumos.ConfigError``."""

    def __init__(
        self,
        cluster: Optional[str] = ...,
        global_batch: Optional[int] = ...,
        micro_batch: Optional[int] = ...,
        virtual_stages: Optional[int] = ...,
        sequence_parallel: bool = ...,
        distributed_optimizer: bool = ...,
        recompute: Optional[str] = ...,
        precision: Optional[str] = ...,
        unfused_attention: bool = ...,
        cuda_sync_events: bool = ...,
        event_records: bool = ...,
        stream_waits: bool = ...,
    ) -> None: ...

class ReplayResult:
    """A replay: its report and tables."""

    @property
    def is_job(self) -> bool: ...
    @property
    def graphs_loaded(self) -> Optional[int]: ...
    def json(self) -> str: ...
    @staticmethod
    def table_names() -> List[str]: ...
    def table(self, name: str) -> RawTable: ...

def expand(paths: Sequence[_Path], lgraph: bool = ...) -> List[str]: ...
def is_lgraph(path: _Path) -> bool: ...
def read_traces(paths: Sequence[_Path], progress: _Progress = ...) -> List[Trace]: ...
def read_pair(a: _Path, b: _Path, progress: _Progress = ...) -> Tuple[Trace, Trace]: ...
def load_job(paths: Sequence[_Path], progress: _Progress = ...) -> Job: ...
def replay_file(path: _Path, options: ReplayOptions, progress: _Progress = ...) -> ReplayResult: ...
def replay_files(
    paths: Sequence[_Path],
    options: ReplayOptions,
    job: Optional[bool] = ...,
    progress: _Progress = ...,
) -> Tuple[ReplayResult, Optional[str]]: ...
def replay_representatives(
    paths: Sequence[_Path], options: ReplayOptions, progress: _Progress = ...
) -> ReplayResult: ...
def inspect_file(path: _Path, progress: _Progress = ...) -> str: ...
def inspect_files(
    paths: Sequence[_Path], job: Optional[bool] = ..., progress: _Progress = ...
) -> Tuple[str, Optional[str]]: ...
def predict_files(
    paths: Sequence[_Path],
    options: PredictOptions,
    durations_from: Optional[_Path] = ...,
    progress: _Progress = ...,
) -> str: ...
def check_diff_options(
    steps: Optional[str] = ..., min_change_us: float = ..., min_change_pct: float = ...
) -> None: ...
def diff_json(
    a: Trace,
    b: Trace,
    steps: Optional[str] = ...,
    min_change_us: float = ...,
    min_change_pct: float = ...,
) -> str: ...
def durations_from_json(a: _Path, b: _Path, progress: _Progress = ...) -> str: ...
def synth(
    model: str,
    out: _Path,
    tp: int,
    pp: int,
    dp: int,
    microbatches: Optional[int],
    gpu: str,
    ranks: str,
    steps: int,
    seed: int,
    recipe: Optional[SynthRecipe] = ...,
    model_json: Optional[str] = ...,
    progress: _Progress = ...,
) -> List[str]: ...
def ingest_name(path: _Path) -> str: ...
def check_output_dir(out_dir: _Path, arg: str) -> None: ...
def ingest_rank(path: _Path, out_dir: _Path) -> Tuple[str, int, int, int]: ...
def load_ingested(paths: Sequence[_Path], progress: _Progress = ...) -> Job: ...
def version() -> str: ...
