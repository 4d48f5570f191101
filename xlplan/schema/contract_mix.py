"""The contract mix on the result: the Answer's fleet paid for as a reserved (or owned) base, on-demand, API and spot."""

from __future__ import annotations

from pydantic import Field

from xlplan.schema.record import _Out


class ContractMixOut(_Out):
    """The contracts section's mix for the Answer's fleet over the daily curve, a month of it (xlplan.money.contracts)."""

    term: str = Field(description="How the base is paid for: 'reserved_1y', 'reserved_3y', 'reserved' or 'owned'. [text]")
    daily_curve: list[float] = Field(description="The 24 hourly fractions of the peak hour. [fraction]")
    tp: int = Field(description="GPUs per replica, the unit the base grows by. [GPUs]")
    load_gpus: int = Field(description="The Answer's load at the peak hour. [GPUs]")
    redundancy_gpus: int = Field(description="The Answer's redundancy, kept every hour. [GPUs]")
    hourly_gpus: list[int] = Field(description="GPUs the promise needs each hour: tp × ceil(curve × load ÷ tp) + redundancy. [GPUs]")
    base_floor_gpus: int = Field(description="The quietest hour's GPUs, the least base. [GPUs]")
    base_gpus: int = Field(description="GPUs reserved (or owned) 24 h a day. [GPUs]")
    base_usd_per_gpu_hour: float = Field(description="The base's price. [USD/GPU-hour]")
    base_source: str = Field(description="Where the base's price comes from. [text]")
    on_demand_usd_per_gpu_hour: float = Field(description="The on-demand price. [USD/GPU-hour]")
    on_demand_source: str = Field(description="Where the on-demand price comes from. [text]")
    break_even: float = Field(description="Share of the hours a reserved GPU must be busy to beat on-demand: base ÷ on-demand price. [fraction]")
    hours_per_month: float = Field(description="Billed hours a month. [h/month]")
    base_monthly_usd: float = Field(description="Base GPUs × hours a month × the base's price. [USD/month]")
    on_demand_gpu_hours_per_month: float = Field(description="On-demand GPU-hours a day × hours a month ÷ 24. [GPU-hours/month]")
    on_demand_monthly_usd: float = Field(description="Those GPU-hours × the on-demand price. [USD/month]")
    api_overflow: bool = Field(description="Whether the plan allows the top of the peak on the API. [bool]")
    api_ceiling_replicas: int = Field(description="Most load replicas on GPUs in any hour; the traffic above goes to the API. [replicas]")
    api_usd_per_request: float | None = Field(description="The API's price of a mean request; None without overflow. [USD/request]")
    api_requests_per_month: float = Field(description="Requests sent to the API. [requests/month]")
    api_monthly_usd: float = Field(description="Those requests × the price of one. [USD/month]")
    no_promise_share: float = Field(description="Share of the traffic with no latency promise. [fraction]")
    spot_usd_per_gpu_hour: float | None = Field(description="The spot price used; None: spot not offered. [USD/GPU-hour]")
    spot_source: str = Field(description="Where the spot price comes from, or why spot is not offered. [text]")
    spot_gpu_hours_per_month: float = Field(description="Spot GPU-hours for the no-promise share. [GPU-hours/month]")
    spot_monthly_usd: float = Field(description="Those GPU-hours × the spot price. [USD/month]")
    monthly_usd: float = Field(description="Base + on-demand + API + spot. [USD/month]")
    always_on_demand_monthly_usd: float = Field(description="The Answer's fleet with redundancy on demand 24 h a day, for comparison. [USD/month]")
    gpu_hours_used_per_month: float = Field(description="Base GPU-hours in use + on-demand + spot. [GPU-hours/month]")
    base_gpu_hours_in_use_per_month: float = Field(description="Base GPU-hours the hours' needs fill. [GPU-hours/month]")
    committed_gpu_hours_per_month: float = Field(description="Base GPUs × hours a month. [GPU-hours/month]")
    effective_savings_rate: float = Field(description="1 − GPU cost (base + on-demand + spot) ÷ GPU-hours used at the on-demand price; the API left out. [fraction]")
    commitment_coverage: float = Field(description="Base GPU-hours in use ÷ GPU-hours used. [fraction]")
    commitment_utilisation: float = Field(description="Base GPU-hours in use ÷ GPU-hours committed. [fraction]")
