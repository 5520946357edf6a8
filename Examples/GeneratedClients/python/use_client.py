"""Uses the client openapi-python-client made from docs/openapi.json against a running server:
every call goes through the generated package (its models parse every answer), so a shape of the
document the generator cannot handle fails here.

    python use_client.py --server http://127.0.0.1:8080 --token-file admin.token --client-dir DIR

DIR holds the generated package `revsync_api_client` (scripts/generated-clients makes it).
"""

import argparse
import sys
import uuid


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--client-dir", required=True)
    arguments = parser.parse_args()
    sys.path.insert(0, arguments.client_dir)

    from revsync_api_client import AuthenticatedClient
    from revsync_api_client.api.admin import get_devices, get_history, get_overview, revert
    from revsync_api_client.api.operations import get_health
    from revsync_api_client.api.sync import get_schema, sync
    from revsync_api_client.models import (ChangeObject, ChangeObjectAttributes, ChangeSetIn, RecordHistoryPage,
                                           RecordValues, RevertRequestType0, SyncRequest)

    with open(arguments.token_file) as file:
        token = file.read().strip()
    client = AuthenticatedClient(base_url=arguments.server, token=token, raise_on_unexpected_status=True)

    def parsed(answer, kind):
        if not isinstance(answer, kind):
            raise SystemExit(f"expected {kind.__name__}, got {answer!r}")
        return answer

    health = get_health.sync(client=client)
    print("health:", health.status)
    schema = get_schema.sync(client=client)
    assert "players" in schema.entities.additional_properties, schema
    print(f"schema version {schema.version}, {len(schema.entities.additional_properties)} entities")

    # POST /sync: a new player with a text, a real, a boolean and a null value.
    change_set_id = "generated-python-" + str(uuid.uuid4())
    values = RecordValues()
    values.additional_properties = {"first_name": "Ana", "last_name": "Lopez", "height_cm": 151.5, "active": True,
                                    "date_of_birth": None}
    attributes = ChangeObjectAttributes()
    attributes.additional_properties = {"-1": values}
    change_set = ChangeSetIn(types=["players"], id=change_set_id)
    change_set.additional_properties = {"players": ChangeObject(create=[-1], attributes=attributes)}
    first = sync.sync(client=client, body=SyncRequest(max_revision=0, change_sets=[change_set]))
    outcome = next(c for c in first.change_sets if c.id == change_set_id)
    assert not outcome.conflict, outcome
    revision = outcome.revision
    print("sync: committed as revision", revision)

    # The committed change set as another device receives it: the values keep their types.
    caught_up = sync.sync(client=client, body=SyncRequest(max_revision=revision - 1, change_sets=[]))
    committed = next(c for c in caught_up.change_sets if c.revision == revision)
    players = committed.additional_properties["players"]
    player_id = players.create[0]
    received = players.attributes.additional_properties[str(player_id)].additional_properties
    assert received["first_name"] == "Ana" and received["height_cm"] == 151.5 and received["active"] is True, received
    assert received["date_of_birth"] is None, received
    print(f"caught up: player {player_id} with {len(received)} values")

    # GET /admin/api/history: the record's history, one of two page shapes.
    page = parsed(get_history.sync(client=client, entity="players", id=player_id), RecordHistoryPage)
    created = page.changes[0]
    assert created.change_set == change_set_id, created
    assert created.after.additional_properties["first_name"] == "Ana", created.after
    print(f"history: {len(page.changes)} change(s), operation {created.operation.value}")

    devices = get_devices.sync(client=client)
    assert devices.devices, devices
    print("devices:", ", ".join(device.name for device in devices.devices))
    overview = get_overview.sync(client=client)
    assert overview.records.additional_properties["players"] == 1, overview.records
    print(f"overview: revision {overview.max_revision}, {overview.devices.total} device(s)")

    result = revert.sync(client=client, body=RevertRequestType0(change_set=change_set_id))
    assert result.deleted == 1, result
    print(f"revert: revision {result.revision} deleted {result.deleted}")
    print("the generated Python client works")


if __name__ == "__main__":
    main()
