"""CreateTopics (19), DeleteTopics (20) and CreatePartitions (37): topic administration."""

from __future__ import annotations

import uuid

from ..api import register
from ..schema import Request, Response, Struct, array, field


class CreateTopicsRequest(Request, api_key=19, versions="2-7", flexible="5+"):
    class CreatableTopic(Struct):
        class CreatableReplicaAssignment(Struct):
            partition_index: int = field("int32")
            broker_ids: list[int] = field("[]int32")

        class CreatableTopicConfig(Struct):
            name: str = field("string")
            value: str | None = field("string", nullable="0+")

        name: str = field("string")
        num_partitions: int = field("int32")
        replication_factor: int = field("int16")
        assignments: list[CreatableReplicaAssignment] = field(array(CreatableReplicaAssignment))
        configs: list[CreatableTopicConfig] = field(array(CreatableTopicConfig))

    topics: list[CreatableTopic] = field(array(CreatableTopic))
    timeout_ms: int = field("int32", default=60000)
    validate_only: bool = field("bool", "1+")


class CreateTopicsResponse(Response, api_key=19, versions="2-7", flexible="5+"):
    class CreatableTopicResult(Struct):
        class CreatableTopicConfigs(Struct):
            name: str = field("string", "5+")
            value: str | None = field("string", "5+", nullable="5+", default=None)
            read_only: bool = field("bool", "5+")
            config_source: int = field("int8", "5+", default=-1, ignorable=True)
            is_sensitive: bool = field("bool", "5+")

        name: str = field("string")
        topic_id: uuid.UUID = field("uuid", "7+", ignorable=True)
        error_code: int = field("int16")
        error_message: str | None = field(
            "string", "1+", nullable="0+", ignorable=True, default=None
        )
        topic_config_error_code: int = field("int16", "5+", tag=0, ignorable=True)
        num_partitions: int = field("int32", "5+", default=-1, ignorable=True)
        replication_factor: int = field("int16", "5+", default=-1, ignorable=True)
        configs: list[CreatableTopicConfigs] | None = field(
            array(CreatableTopicConfigs), "5+", nullable="5+", ignorable=True
        )

    throttle_time_ms: int = field("int32", "2+", ignorable=True)
    topics: list[CreatableTopicResult] = field(array(CreatableTopicResult))


class DeleteTopicsRequest(Request, api_key=20, versions="1-6", flexible="4+"):
    class DeleteTopicState(Struct):
        name: str | None = field("string", "6+", nullable="6+", default=None)
        topic_id: uuid.UUID = field("uuid", "6+")

    topics: list[DeleteTopicState] = field(array(DeleteTopicState), "6+")
    topic_names: list[str] = field("[]string", "0-5", ignorable=True)
    timeout_ms: int = field("int32")


class DeleteTopicsResponse(Response, api_key=20, versions="1-6", flexible="4+"):
    class DeletableTopicResult(Struct):
        name: str | None = field("string", nullable="6+")
        topic_id: uuid.UUID = field("uuid", "6+", ignorable=True)
        error_code: int = field("int16")
        error_message: str | None = field(
            "string", "5+", nullable="5+", default=None, ignorable=True
        )

    throttle_time_ms: int = field("int32", "1+", ignorable=True)
    responses: list[DeletableTopicResult] = field(array(DeletableTopicResult))


class CreatePartitionsRequest(Request, api_key=37, versions="0-3", flexible="2+"):
    class Topic(Struct):
        class Assignment(Struct):
            broker_ids: list[int] = field("[]int32")

        name: str = field("string")
        count: int = field("int32")
        assignments: list[Assignment] | None = field(array(Assignment), nullable="0+")

    topics: list[Topic] = field(array(Topic))
    timeout_ms: int = field("int32")
    validate_only: bool = field("bool")


class CreatePartitionsResponse(Response, api_key=37, versions="0-3", flexible="2+"):
    class TopicResult(Struct):
        name: str = field("string")
        error_code: int = field("int16")
        error_message: str | None = field("string", nullable="0+", default=None)

    throttle_time_ms: int = field("int32")
    results: list[TopicResult] = field(array(TopicResult))


CREATE_TOPICS = register(CreateTopicsRequest, CreateTopicsResponse)
DELETE_TOPICS = register(DeleteTopicsRequest, DeleteTopicsResponse)
CREATE_PARTITIONS = register(CreatePartitionsRequest, CreatePartitionsResponse)
