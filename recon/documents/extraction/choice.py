"""Which extractor a worker uses: the OpenAI one when OPENAI_API_KEY or OPENAI_BASE_URL is set,
else the offline parser. Each extractor module imports the interface (answer.py), never this one."""

from __future__ import annotations

from recon.documents.extraction.answer import Extractor
from recon.documents.extraction.offline_extractor import OfflineExtractor
from recon.runtime.config import Settings


def make_extractor(settings: Settings) -> Extractor:
    if settings.openai_api_key or settings.openai_base_url:
        from recon.documents.extraction.openai_model import OpenAIExtractor

        return OpenAIExtractor(settings)
    return OfflineExtractor()
