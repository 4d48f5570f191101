"""The plan's model and hardware sections: the model and its precision, the GPU, the purchasing unit and the price.

Catalog names are checked here, so a misspelt model or GPU is reported against its field with the closest matches.
Part of the plan file's schema; import the models from :mod:`xlplan.schema.plan`, their public home.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from xlplan import catalog
from xlplan.catalog.specs import GPUSpec, KVDtype, ModelSpec, WeightDtype
from xlplan.schema.fields import _Section


class ModelChoice(_Section):
    """The model and its precision (a catalog name, or an inline spec read from config.json)."""

    name: str | None = Field(default=None, description="Catalog name, Hugging Face id or alias; see `xlplan catalog models`. [text]")
    config: str | None = Field(default=None, description="Path to a Hugging Face config.json, read when the plan file is loaded. [path]")
    spec: dict[str, Any] | None = Field(
        default=None, description="Model fields given inline, overriding the catalog entry field by field (see ModelSpec). [mapping]"
    )
    weights_dtype: WeightDtype = Field(default="bf16", description="Weight precision: bf16, fp16, fp8, int8, int4, mxfp4, nvfp4/fp4. [text]")
    kv_dtype: KVDtype = Field(default="bf16", description="KV-cache precision: bf16, fp16, fp8, int8. [text]")

    @model_validator(mode="after")
    def _resolvable(self) -> ModelChoice:
        if self.name is None and self.spec is None:
            raise ValueError("give the model's name (see `xlplan catalog models`), its config (a config.json path) or an inline spec")
        if self.name is not None:
            try:
                catalog.model_key(self.name)
            except catalog.UnknownNameError as e:
                if self.spec is None:
                    raise ValueError(str(e)) from None
        self.resolve()
        return self

    def resolve(self) -> ModelSpec:
        """The model's spec: the catalog entry with any inline fields applied.

        Returns
        -------
        ModelSpec
            The catalog entry for ``name`` (or only that name, when the catalog lacks it) with ``spec``'s fields on top.
        """
        base: dict[str, Any] = {}
        if self.name is not None:
            try:
                base = catalog.get_model(self.name).model_dump()
            except catalog.UnknownNameError:
                base = {"name": self.name}
        return ModelSpec(**{**base, **(self.spec or {})})


class GPUOverride(_Section):
    """A GPU given inline: a catalog name with fields replaced, or a new GPU in full."""

    name: str = Field(description="Catalog name, or a new GPU's name. [text]")
    memory_gib: float | None = Field(default=None, gt=0, description="Memory as the driver reports it. [GiB]")
    bf16_tflops: float | None = Field(default=None, gt=0, description="Peak dense BF16 throughput. [TFLOP/s]")
    fp8_tflops: float | None = Field(default=None, gt=0, description="Peak dense FP8 throughput. [TFLOP/s]")
    fp4_tflops: float | None = Field(default=None, gt=0, description="Peak dense FP4 throughput. [TFLOP/s]")
    hbm_tbps: float | None = Field(default=None, gt=0, description="Memory bandwidth. [TB/s]")
    usd_per_gpu_hour: float | None = Field(default=None, gt=0, description="Rental price. [USD/GPU-hour]")


class Hardware(_Section):
    """The accelerator, the purchasing unit and the price."""

    gpu: str | GPUOverride = Field(description="Catalog GPU name (see `xlplan catalog gpus`) or an inline GPU. [text]")
    gpus_per_node: int = Field(default=8, ge=1, description="The purchasing unit; tensor-parallel groups stay inside it. [GPUs]")
    usd_per_gpu_hour: float | None = Field(default=None, gt=0, description="Price paid; left out, the catalog's representative price. [USD/GPU-hour]")
    hours_per_month: float = Field(default=730.0, gt=0, le=744, description="Billed hours in a month (8,760 / 12 = 730). [h/month]")
    ops_usd_per_month: float = Field(default=0.0, ge=0, description="Engineering and on-call cost of self-hosting, used in the break-even. [USD/month]")

    @field_validator("gpu")
    @classmethod
    def _known(cls, v):
        name = v if isinstance(v, str) else v.name
        try:
            catalog.gpu_key(name)
        except catalog.UnknownNameError as e:
            if isinstance(v, str):
                raise ValueError(str(e)) from None
            missing = [f for f in ("memory_gib", "bf16_tflops", "hbm_tbps") if getattr(v, f) is None]
            if missing:
                raise ValueError(f"{e}; a GPU not in the catalog needs {', '.join(missing)}") from None
        return v

    def resolve(self) -> GPUSpec:
        """The GPU's spec: the catalog entry with any inline fields applied.

        Returns
        -------
        GPUSpec
            The catalog entry for ``gpu``; for an inline GPU, the catalog entry of its name (if any) with its given fields
            on top.
        """
        if isinstance(self.gpu, str):
            return catalog.get_gpu(self.gpu)
        fields = {k: v for k, v in self.gpu.model_dump().items() if v is not None}
        try:
            base = catalog.get_gpu(self.gpu.name).model_dump()
        except catalog.UnknownNameError:
            base = {}
        return GPUSpec(**{**base, **fields})

    def quoted_price(self) -> tuple[float, str] | None:
        """The price the plan uses and whose it is: the plan's ``usd_per_gpu_hour``, else the catalog's representative
        rental price for the GPU. The one rule every surface prices a GPU-hour by.

        Returns
        -------
        tuple of (float, str) or None
            (price [USD/GPU-hour], 'plan' or 'catalog'); None when neither the plan nor the catalog has a price.
        """
        if self.usd_per_gpu_hour is not None:
            return float(self.usd_per_gpu_hour), "plan"
        catalog_price = self.resolve().usd_per_gpu_hour
        return None if catalog_price is None else (float(catalog_price), "catalog")

    def price(self) -> float:
        """The price the plan uses. [USD/GPU-hour]

        Returns
        -------
        float
            :meth:`Hardware.quoted_price`'s price. [USD/GPU-hour]

        Raises
        ------
        ValueError
            When neither the plan nor the catalog has a price.
        """
        quoted = self.quoted_price()
        if quoted is None:
            raise ValueError("no price: give hardware.usd_per_gpu_hour")
        return quoted[0]
