"""The models this deployment serves, by operation (extension): what a create's `model`,
`steps`, `guidance` and `loras` may ask (core/served_models.py)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from gateway.auth import CallerDep
from gateway.dependencies import CreationDep
from gateway.models.schemas import ModelList
from gateway.schemas import ERROR_RESPONSES, ContractRoute

router = APIRouter(route_class=ContractRoute, responses=ERROR_RESPONSES)

OperationFilter = Annotated[
    str | None, Query(description="Only the models of this operation (generate, edit, ...)")
]


@router.get(
    "/models",
    response_model=ModelList,
    summary="List the models this deployment serves, by operation (extension)",
)
def list_models(
    _caller: CallerDep, creation: CreationDep, operation: OperationFilter = None
) -> Any:
    served = creation.served.models
    return {
        "data": [
            model.view() for model in served if operation is None or model.operation == operation
        ]
    }
