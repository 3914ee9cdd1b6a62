"""The merchant's identity a payer sees on the checkout page: a name, a logo, a way to reach
support (``POST /merchant/profile``, docs/checkout.md §Merchant identity).

Why it exists: the page otherwise names the merchant by a wallet address only, which a buyer
cannot tell from a phishing copy; a name, a logo and a support contact the owner signed for
are what a buyer looks for before paying.
"""

from .profile import MerchantProfile, NewProfile, parse_profile
from .service import MerchantProfiles

__all__ = ["MerchantProfile", "MerchantProfiles", "NewProfile", "parse_profile"]
