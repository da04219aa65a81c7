"""What vulture (tests/test_architecture.py) would call unused, and why each is used.

Names read by the frameworks or the JSON (dataclass fields, pydantic config and validators,
routes and commands registered by decorators, dunders read by inspect), the HTTP client's
request builders found by name (``Requests.call``), the SDK's constants and a few methods
the tests call. A new entry needs a reason; dead code is deleted instead.
"""

# ruff: noqa

_.maxlevel  # unused attribute (openviking/values/arguments.py)
_.maxstring  # unused attribute (openviking/values/arguments.py)
_.maxother  # unused attribute (openviking/values/arguments.py)
_.maxlong  # unused attribute (openviking/values/arguments.py)
MEMORY  # unused variable (openviking/contract/hits.py)
RESOURCE  # unused variable (openviking/contract/hits.py)
SKILL  # unused variable (openviking/contract/hits.py)
ALL  # unused variable (openviking/contract/hits.py)
_._grep  # unused method (openviking/http_client/calls.py)
_._ls  # unused method (openviking/http_client/calls.py)
_._stat  # unused method (openviking/http_client/calls.py)
_._add_resource  # unused method (openviking/http_client/calls.py)
_._update_watch  # unused method (openviking/http_client/calls.py)
_._add_skill  # unused method (openviking/http_client/calls.py)
_._add_memory  # unused method (openviking/http_client/calls.py)
_._rm  # unused method (openviking/http_client/calls.py)
_._mv  # unused method (openviking/http_client/calls.py)
_._create_session  # unused method (openviking/http_client/calls.py)
_._add_message  # unused method (openviking/http_client/calls.py)
_._get_session  # unused method (openviking/http_client/calls.py)
_._list_sessions  # unused method (openviking/http_client/calls.py)
_._delete_session  # unused method (openviking/http_client/calls.py)
_._doctor  # unused method (openviking/http_client/calls.py)
_.__wrapped__  # unused attribute (openviking/contract/operations.py)
__call__  # unused function (openviking/contract/operations.py)
_.__signature__  # unused attribute (openviking/contract/operations.py)
linked  # unused variable (openviking/contract/results.py)
mod_time  # unused variable (openviking/contract/results.py)
tags_changed  # unused variable (openviking/contract/results.py)
messages_deleted  # unused variable (openviking/contract/results.py)
resumed  # unused variable (openviking/contract/results.py)
previous_embedder  # unused variable (openviking/contract/results.py)
switched_table  # unused variable (openviking/contract/results.py)
_._one_of  # unused method (openviking/server/bodies.py)
_._one_of  # unused method (openviking/server/bodies.py)
media_type  # unused variable (openviking/server/envelope.py)
_.__signature__  # unused attribute (openviking/server/routes/declared.py)
temp_upload  # unused function (openviking/server/routes/resources.py)
doctor_repair  # unused function (openviking/server/routes/system.py)
observer_system  # unused function (openviking/server/routes/upstream.py)
observer_component  # unused function (openviking/server/routes/upstream.py)
wait_processed  # unused function (openviking/server/routes/upstream.py)
content_reindex  # unused function (openviking/server/routes/upstream.py)
get_watch  # unused function (openviking/server/routes/watches.py)
update_watch_by_id  # unused function (openviking/server/routes/watches.py)
delete_watch_by_id  # unused function (openviking/server/routes/watches.py)
trigger_watch_by_id  # unused function (openviking/server/routes/watches.py)
written_bytes  # unused variable (openviking/contract/results.py): WriteResult's JSON, as upstream's
content_updated  # unused variable (openviking/contract/results.py): WriteResult's JSON, as upstream's
new_key  # unused function (openviking_cli/commands/serve.py)
_.on_broken_pipe  # unused method (openviking_cli/console.py)
_.quiet  # unused attribute (openviking_cli/console.py)
_.__signature__  # unused attribute (openviking_cli/runtime.py)
_.__annotations__  # unused attribute (openviking_cli/runtime.py)
_._context  # unused method (openviking/http_client/calls.py): found by name, as the other builders
archived  # unused variable (openviking/contract/results.py): CommitResult's JSON, as upstream's
estimated_active_tokens  # unused variable (openviking/contract/results.py): CommitResult's JSON, as upstream's
budget_exceeded  # unused variable (openviking/contract/results.py): CommitResult's JSON, as upstream's
rendered  # unused variable (openviking/contract/results.py): ContextResult's JSON
texts_embedded  # unused variable (openviking/contract/results.py): IndexResult's JSON
tokenizer  # unused variable (openviking/contract/results.py): ContextResult's JSON
latest_archive_overview  # unused variable (openviking/contract/results.py): SessionContext's JSON, as upstream's
pre_archive_abstracts  # unused variable (openviking/contract/results.py): SessionContext's JSON, as upstream's
estimated_tokens  # unused variable (openviking/contract/results.py): SessionContext's JSON, as upstream's
eval_  # unused function (openviking_cli/commands/eval.py): a command, registered by its decorator
_._whole_numbers  # unused method (openviking/server/bodies.py): a pydantic validator, run on every body
list_skills  # unused function (openviking/server/routes/upstream.py): a route, registered by its decorator
_.__override__  # unused attribute (openviking/store/_fastimport.py): the marker overrides' EnforceOverrides metaclass reads
