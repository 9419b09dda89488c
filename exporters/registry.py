"""Export type -> platform, item sources (the first one is the primary table) and service name.

The worker runtime and the CLI look export types up here; the routing key is
export.start.<platform>.<type>. Type names are SFM's harvest type names, so SFM requesters work unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from swath.exporters.datasets import CkanDatasets, DcatDatasets, OaiRecords, OdsDatasets
from swath.exporters.flickr import Flickr
from swath.exporters.items import Source
from swath.exporters.metashare import Metashare
from swath.exporters.tumblr import Tumblr
from swath.exporters.twitter_v1 import TwitterV1
from swath.exporters.twitter_v2 import TwitterV2
from swath.exporters.weibo import Weibo
from swath.exporters.xesam import Xesam
from swath.messages import routing


@dataclass(frozen=True)
class ExportType:
    name: str
    platform: str
    service: str
    # Item sources read for this type; a response is read by the first whose URL markers match.
    # Twitter types read both API versions, so a collection holding both exports one table per version.
    sources: tuple[type[Source], ...]
    # True for tables of the current state (datasets, LRs, Xesam payloads): the latest copy of each item
    # only, deletions left out, whatever the export's `dedupe` says.
    current_state: bool = False

    @property
    def primary_table(self) -> str:
        return self.sources[0].table.name


class UnknownExportType(KeyError):
    """No exporter here handles this export type."""


_V1 = (TwitterV1, TwitterV2)
_V2 = (TwitterV2, TwitterV1)
_TYPES = [
    ExportType(name="twitter_search", platform="twitter", service="Twitter Exporter", sources=_V1),
    ExportType(name="twitter_filter", platform="twitter", service="Twitter Exporter", sources=_V1),
    ExportType(name="twitter_sample", platform="twitter", service="Twitter Exporter", sources=_V1),
    ExportType(name="twitter_user_timeline", platform="twitter", service="Twitter Exporter", sources=_V1),
    ExportType(name="twitter_search_2", platform="twitter", service="Twitter Exporter", sources=_V2),
    ExportType(name="twitter_academic_search", platform="twitter", service="Twitter Exporter", sources=_V2),
    ExportType(name="twitter_user_timeline_2", platform="twitter", service="Twitter Exporter", sources=_V2),
    ExportType(name="twitter_filter_stream", platform="twitter", service="Twitter Exporter", sources=_V2),
    ExportType(name="flickr_user", platform="flickr", service="Flickr Exporter", sources=(Flickr,)),
    ExportType(name="tumblr_blog_posts", platform="tumblr", service="Tumblr Exporter", sources=(Tumblr,)),
    ExportType(name="weibo_timeline", platform="weibo", service="Weibo Exporter", sources=(Weibo,)),
    ExportType(name="weibo_search", platform="weibo", service="Weibo Exporter", sources=(Weibo,)),
    # Protocol harvesters: platform = the harvest platform (harvesters/registry.py); current-state tables.
    ExportType(name="oai_pmh", platform="oai_pmh", service="OAI-PMH Exporter", sources=(OaiRecords,),
               current_state=True),
    ExportType(name="dcat", platform="dcat", service="DCAT Exporter", sources=(DcatDatasets,), current_state=True),
    ExportType(name="ckan", platform="ckan", service="CKAN Exporter", sources=(CkanDatasets,), current_state=True),
    ExportType(name="opendatasoft", platform="opendatasoft", service="OpenDataSoft Exporter",
               sources=(OdsDatasets,), current_state=True),
    ExportType(name="metashare_sync", platform="metashare", service="META-SHARE Exporter", sources=(Metashare,),
               current_state=True),
    ExportType(name="xesam_pmh", platform="xesam", service="Xesam Exporter", sources=(Xesam,), current_state=True),
]
TYPES: dict[str, ExportType] = {t.name: t for t in _TYPES}


def export_types() -> list[str]:
    return list(TYPES)


def lookup(name: str) -> ExportType:
    try:
        return TYPES[name]
    except KeyError:
        raise UnknownExportType(name) from None


def platform_of(name: str) -> str:
    return lookup(name).platform


def start_routing_key(name: str) -> str:
    return routing.key("export_start", platform_of(name), name)
