"""The word lists the catalog generator draws from: categories, product types, attributes, options.

* ``CATEGORIES`` - the five WebShop categories, each with its breadcrumb root, brands and types.
* ``ProductType`` - one product type ("query" in WebShop's data): breadcrumb, noun phrase,
  attribute groups, option dimensions and a price range.
* ``ATTRIBUTE_GROUPS`` - 2-4 word attribute phrases ("sulfate free", "machine wash", ...).
* ``OPTION_POOLS`` - option values per option dimension, in WebShop's styles.
* ``title_nouns`` - the words of a generated title that spaCy's ``en_core_web_sm`` tags NOUN or
  PROPN, predicted offline by ``titletagger.TitleNounTagger`` (weights built by
  ``scripts/build_webshop_nouns.py``); the reward's ``r_type`` uses it for generated titles.

Types are written as one line each, ``query | breadcrumb tail | type name | groups | options |
price range``, so the table stays readable.
"""

# ruff: noqa: E501  (tables keep one entry per line)
from __future__ import annotations

from dataclasses import dataclass

from .titletagger import TitleNounTagger

__all__ = [
    "ATTRIBUTE_GROUPS",
    "CATEGORIES",
    "Category",
    "MODIFIERS",
    "OPTION_POOLS",
    "ProductType",
    "title_nouns",
]


@dataclass(frozen=True)
class ProductType:
    category: str
    query: str
    product_category: str
    name: str
    groups: tuple[str, ...]
    options: tuple[str, ...]
    price: tuple[float, float]


@dataclass(frozen=True)
class Category:
    name: str
    root: str
    brands: tuple[str, ...]
    types: tuple[ProductType, ...]


# fmt: off
ATTRIBUTE_GROUPS: dict[str, tuple[str, ...]] = {
    "hair": ("sulfate free", "paraben free", "dry hair", "color safe", "hair growth", "anti frizz",
             "deep conditioning", "cruelty free", "argan oil", "curly hair", "damaged hair",
             "natural ingredients", "hair loss", "tea tree"),
    "skin": ("dermatologist tested", "fragrance free", "sensitive skin", "hyaluronic acid", "anti aging",
             "oil free", "non comedogenic", "vitamin c", "dry skin", "spf 30", "shea butter",
             "fine lines", "dark spots", "paraben free"),
    "makeup": ("long lasting", "waterproof", "cruelty free", "easy apply", "highly pigmented", "vegan",
               "smudge proof", "natural finish", "matte finish", "travel size", "sensitive eyes"),
    "tools": ("easy use", "travel size", "stainless steel", "non slip", "rechargeable battery",
              "easy clean", "high quality", "storage case", "professional salon", "ceramic coating"),
    "fragrance": ("long lasting", "travel size", "natural ingredients", "alcohol free", "gift set",
                  "essential oil", "cruelty free", "fresh scent"),
    "oral": ("fluoride free", "teeth whitening", "sensitive teeth", "fresh breath", "travel size",
             "soft bristles", "bad breath", "long lasting battery"),
    "wig": ("natural looking", "heat resistant", "human hair", "glueless", "pre plucked", "lace front",
            "baby hair", "synthetic hair"),
    "audio": ("noise cancelling", "wireless bluetooth", "long battery life", "hands free", "water resistant",
              "high fidelity", "built in microphone", "fast charging", "stereo sound", "easy carry"),
    "power": ("fast charging", "usb c", "easy carry", "high speed", "plug play", "heavy duty",
              "compact design", "overcharge protection", "universal compatibility", "nylon braided"),
    "computer": ("high speed", "plug play", "easy install", "high resolution", "ultra thin",
                 "backlit keyboard", "ergonomic design", "low latency", "rgb lighting", "usb port"),
    "camera": ("4k ultra hd", "night vision", "motion detection", "easy install", "wide angle",
               "two way audio", "high definition", "cloud storage", "optical zoom"),
    "tv": ("4k ultra hd", "high definition", "smart tv", "wall mount", "dolby atmos", "easy install",
           "remote control", "full motion"),
    "accessory": ("shockproof", "scratch resistant", "slim fit", "easy install", "anti fingerprint",
                  "tempered glass", "heavy duty", "wireless charging", "kickstand"),
    "wearable": ("heart rate", "sleep tracking", "water resistant", "long battery life", "fitness tracker",
                 "touch screen", "blood oxygen", "quick release"),
    "apparel": ("machine wash", "relaxed fit", "long sleeve", "short sleeve", "button closure",
                "quick drying", "moisture wicking", "soft material", "regular fit", "classic fit",
                "high waist", "elastic waistband", "polyester spandex", "cotton blend", "hand wash",
                "tummy control", "slim fit"),
    "shoes": ("non slip", "rubber sole", "memory foam", "arch support", "lace up", "slip on",
              "lightweight", "breathable", "water resistant", "wide width", "closed toe", "open toe",
              "ankle strap", "rubber outsole"),
    "jewelry": ("adjustable strap", "gift box", "stainless steel", "hypoallergenic", "lightweight",
                "water resistant", "zipper closure", "large capacity", "genuine leather", "sterling silver",
                "uv protection", "polarized lenses"),
    "food": ("gluten free", "non gmo", "low sugar", "high protein", "keto friendly", "sugar free",
             "low carb", "dairy free", "plant based", "usda organic", "kosher certified", "ready eat",
             "individually wrapped", "artificial flavors", "low calorie", "whole grain", "grass fed",
             "shelf stable", "resealable bag", "nut free"),
    "drink": ("sugar free", "caffeine free", "usda organic", "non gmo", "low calorie", "natural flavors",
              "zero sugar", "fair trade", "single serve", "whole bean", "medium roast", "dark roast"),
    "furniture": ("easy assembly", "solid wood", "metal frame", "space saving", "mid century",
                  "living room", "storage space", "high density foam", "wood finish", "modern design",
                  "engineered wood", "home office", "lumbar support", "height adjustable"),
    "decor": ("machine washable", "living room", "easy clean", "non slip", "dining room", "fade resistant",
              "blackout", "thermal insulated", "super soft", "wrinkle free", "deep pocket", "queen size"),
    "kitchen": ("dishwasher safe", "bpa free", "non stick", "easy clean", "stainless steel",
                "heat resistant", "food grade", "microwave safe", "leak proof", "large capacity",
                "induction compatible", "double wall"),
    "garden": ("weather resistant", "easy install", "solar powered", "rust resistant", "heavy duty",
               "uv resistant", "outdoor use", "water saving", "drainage hole", "auto on off"),
}

# Option values as they appear in the raw files (the loader lowercases them and turns "/" into " | ").
OPTION_POOLS: dict[str, tuple[str, ...]] = {
    "color": ("Black", "White", "Navy Blue", "Dark Brown", "Light Grey", "Rose Gold", "Z2-Pink", "Red",
              "Forest Green", "Sky Blue", "Beige", "Burgundy", "Khaki", "Olive", "Purple", "Silver",
              "Gold", "Teal", "Ivory", "Charcoal", "Hot Pink", "Black/White", "Coral", "Mint Green",
              "Lavender", "Mustard Yellow", "Off White", "Dark Grey", "Camel", "A1-Black", "Tan",
              "Wine Red", "Multicolor", "Clear", "Space Gray", "Espresso", "Walnut", "Natural"),
    "apparel_size": ("XX-Small", "X-Small", "Small", "Medium", "Large", "X-Large", "XX-Large", "3X-Large",
                     "Small Petite", "Large Tall"),
    "kids_size": ("2T", "3T", "4T", "5-6 Years", "7-8 Years", "9-10 Years", "11-12 Years"),
    "shoe_size": ("5", "5.5", "6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "12",
                  "7 Wide", "8 Wide", "9 Wide", "10 Wide"),
    "kids_shoe": ("10 Little Kid", "11 Little Kid", "12 Little Kid", "1 Big Kid", "2 Big Kid", "3 Big Kid"),
    "waist_size": ("28W x 30L", "30W x 30L", "32W x 32L", "34W x 32L", "36W x 32L", "38W x 34L", "26", "27"),
    "volume": ("1 Fl Oz", "2 Fl Oz", "3.4 Fl Oz", "4 Fl Oz", "8 Fl Oz", "12 Fl Oz", "16 Fl Oz", "32 Fl Oz",
               "8 Fl Oz (Pack of 2)", "16.9 Fl Oz (Pack of 3)"),
    "weight": ("3 Ounce (Pack of 1)", "3 Ounce (Pack of 6)", "4 Ounce", "8 Ounce", "12 Ounce", "16 Ounce",
               "1 Pound", "2 Pound", "5 Pound", "1.5 Ounce (Pack of 12)", "2.2 Pound (Pack of 2)"),
    "count": ("Pack of 1", "Pack of 2", "Pack of 3", "Pack of 4", "Pack of 6", "Pack of 12", "12 Count",
              "24 Count", "36 Count", "100 Count", "2 Piece Set", "4 Piece Set"),
    "scent": ("Lavender", "Vanilla", "Eucalyptus", "Unscented", "Citrus", "Coconut", "Rose", "Sandalwood",
              "Fresh Linen", "Ocean Breeze", "Peppermint", "Jasmine", "Cedarwood", "Green Tea"),
    "flavor": ("Original", "Vanilla", "Chocolate", "Strawberry", "Sea Salt", "Barbecue", "Honey",
               "Cinnamon", "Peanut Butter", "Lemon", "Mint", "Caramel", "Mixed Berry", "Spicy",
               "Unsweetened", "Cookies and Cream", "Salted Caramel", "Sour Cream and Onion"),
    "coffee_flavor": ("Medium Roast", "Dark Roast", "Light Roast", "French Vanilla", "Hazelnut",
                      "Colombian", "Espresso Roast", "Decaf", "Breakfast Blend", "Mocha"),
    "tp_flavor": ("Mint", "Cool Mint", "Spearmint", "Cinnamon", "Charcoal", "Bubble Gum"),
    "capacity": ("32GB", "64GB", "128GB", "256GB", "512GB", "1TB", "2TB", "4TB"),
    "capacity_mah": ("5000mAh", "10000mAh", "20000mAh", "26800mAh"),
    "length": ("3 ft", "6 ft", "10 ft", "1 Meter", "2 Meter", "15 ft"),
    "length_ft": ("25 ft", "50 ft", "75 ft", "100 ft"),
    "style": ("WiFi", "WiFi + Cellular", "Bluetooth", "USB-C", "Lightning", "Standard", "Pro", "Mini",
              "Plus", "Wired", "Wireless"),
    "phone_model": ("iPhone 13", "iPhone 14 Pro", "iPhone 15", "Galaxy S23", "Galaxy S24 Ultra", "Pixel 8",
                    "iPhone 12/12 Pro"),
    "tablet_model": ("iPad 10.2 inch", "iPad Air 5", "iPad Pro 11", "Galaxy Tab S8", "Fire HD 10"),
    "laptop_size": ("13 inch", "14 inch", "15.6 inch", "16 inch", "17 inch"),
    "screen_size": ("24 inch", "27 inch", "32 inch", "34 inch", "42-70 inch", "26-55 inch"),
    "band_size": ("38mm/40mm/41mm", "42mm/44mm/45mm", "Small", "Large"),
    "barrel": ("0.75 Inch", "1 Inch", "1.25 Inch", "1.5 Inch"),
    "hair_length": ("14 Inch", "16 Inch", "18 Inch", "20 Inch", "22 Inch", "26 Inch"),
    "ring_size": ("10 Inch", "12 Inch", "14 Inch", "18 Inch"),
    "bed_size": ("Twin", "Full", "Queen", "King", "California King", "Twin XL"),
    "rug_size": ("2 x 3 ft", "3 x 5 ft", "4 x 6 ft", "5 x 7 ft", "8 x 10 ft", "Runner 2 x 8 ft"),
    "curtain_size": ("52 x 63 inch", "52 x 84 inch", "52 x 95 inch", "52 x 108 inch"),
    "pillow_size": ("16 x 16 inch", "18 x 18 inch", "20 x 20 inch", "12 x 20 inch"),
    "art_size": ("12 x 16 inch", "16 x 24 inch", "24 x 36 inch", "3 Panels"),
    "desk_size": ("40 inch", "47 inch", "55 inch", "63 inch"),
    "pot_size": ("4 inch", "6 inch", "8 inch", "10 inch", "12 inch"),
    "material": ("Cotton", "Linen", "Polyester", "Bamboo", "Velvet", "Faux Leather", "Ceramic", "Glass",
                 "Stainless Steel", "Wood", "Plastic", "Aluminum"),
}

MODIFIERS: tuple[str, ...] = ("Premium", "Classic", "Deluxe", "Ultra", "Professional", "Everyday", "New",
                              "Upgraded", "Original", "Advanced", "Portable", "Compact", "Essential",
                              "Signature", "Modern", "Vintage", "Elite", "Basic", "Pure", "Luxury")

_BRANDS = {
    "beauty": "Lumora Velisse Aurelle Kindra Solvane Mirabi Petalis Dewbloom Naturelle Orvia Zenessa "
              "Calista Bellaro Sorelle Glowra Marisol Verdana Amberly Luxene Seraphia",
    "electronics": "Voltix Zentron Aurix Nexora Kyvo Sonique Trivex Pulsar Ampero Quantix Lumetra "
                   "Vectra Orbix Helion Stratos Corvax Xylo Tekbright Novatek Ridgeon",
    "fashion": "Marlowe Tessara Hollis Brixton Camdyn Vireo Ostara Lennox Sabeline Rowan Kestrel "
               "Halden Juniper Wrenley Dalton Ashby Corinne Fable Maddox Sienna",
    "grocery": "Harvestly Goodwell Orchard Fieldstone Nutrea Sunbrook Wholeland Maplecrest Pantrio "
               "Graingold Farmella Bramble Ripeleaf Cornerstone Honeyfield Saltmarsh Crestway Tastelle "
               "Greenvale Oakridge",
    "garden": "Homeland Nestwell Cedarly Loftique Hearthway Birchwood Terrava Casalto Woodmere Dwellan "
              "Gardenia Rustiq Habita Lindell Porchlight Stoneview Willowby Ambra Kensley Verano",
}

_TYPES = {
    "beauty": """
shampoos | Hair Care › Shampoo & Conditioner › Shampoos | shampoo | hair | scent,volume | 6-38
conditioners | Hair Care › Shampoo & Conditioner › Conditioners | conditioner | hair | scent,volume | 6-36
hair masks | Hair Care › Hair Treatments › Masks | hair mask | hair | volume | 8-40
hair oils | Hair Care › Hair Treatments › Oils | hair oil | hair | scent,volume | 7-35
hair dryers | Hair Care › Styling Tools › Hair Dryers | hair dryer | tools,hair | color | 25-160
hair straighteners | Hair Care › Styling Tools › Flat Irons | hair straightener | tools | color | 20-140
curling irons | Hair Care › Styling Tools › Curling Irons | curling iron | tools | color,barrel | 18-90
hair brushes | Hair Care › Styling Tools › Brushes | hair brush | tools | color | 6-35
wigs | Hair Care › Hair Extensions & Wigs › Wigs | wig | wig | color,hair_length | 25-180
face moisturizers | Skin Care › Face › Moisturizers | face moisturizer | skin | volume | 9-60
face serums | Skin Care › Face › Serums | face serum | skin | volume | 10-65
sunscreens | Skin Care › Sun › Sunscreens | sunscreen | skin | volume,count | 7-30
body lotions | Skin Care › Body › Lotions | body lotion | skin | scent,volume | 5-28
body washes | Bath & Bathing Accessories › Bath › Body Washes | body wash | skin | scent,volume | 5-25
bath bombs | Bath & Bathing Accessories › Bath › Bath Bombs | bath bomb | fragrance | scent,count | 8-35
lipsticks | Makeup › Lips › Lipstick | lipstick | makeup | color | 5-30
eyeliners | Makeup › Eyes › Eyeliner | eyeliner | makeup | color | 4-22
mascaras | Makeup › Eyes › Mascara | mascara | makeup | color | 5-26
foundations | Makeup › Face › Foundation | foundation | makeup | color,volume | 8-45
eyeshadow palettes | Makeup › Eyes › Eyeshadow | eyeshadow palette | makeup | color | 8-48
makeup brushes | Tools & Accessories › Makeup Brushes & Tools › Brush Sets | makeup brush set | tools,makeup | color | 8-40
nail polish | Foot, Hand & Nail Care › Nail Art & Polish › Nail Polish | nail polish | makeup | color,count | 4-25
perfumes | Fragrance › Women's › Eau de Parfum | perfume | fragrance | scent,volume | 20-120
colognes | Fragrance › Men's › Cologne | cologne | fragrance | scent,volume | 20-110
essential oils | Fragrance › Aromatherapy › Essential Oils | essential oil | fragrance | scent,count | 6-30
electric toothbrushes | Oral Care › Toothbrushes › Electric Toothbrushes | toothbrush | oral,tools | color | 15-120
toothpastes | Oral Care › Toothpaste | toothpaste | oral | tp_flavor,count | 3-18
razors | Shave & Hair Removal › Men's › Razors | razor | tools | count | 6-60
beard oils | Shave & Hair Removal › Men's › Beard Care | beard oil | hair,fragrance | scent,volume | 8-30
deodorants | Personal Care › Deodorants & Antiperspirants | deodorant | skin | scent,count | 4-20
""",
    "electronics": """
wireless earbuds | Headphones, Earbuds & Accessories › Earbuds | earbuds | audio | color | 15-150
headphones | Headphones, Earbuds & Accessories › Over-Ear Headphones | headphones | audio | color | 20-300
bluetooth speakers | Portable Audio & Video › Speakers | speaker | audio | color | 15-200
soundbars | Home Audio › Sound Bars | soundbar | audio,tv | style | 60-400
phone chargers | Cell Phones & Accessories › Chargers & Power Adapters | phone charger | power | color,count | 8-40
usb cables | Computers & Accessories › Cables › USB Cables | usb cable | power | color,length | 5-25
power banks | Cell Phones & Accessories › Portable Power Banks | power bank | power | color,capacity_mah | 15-80
phone cases | Cell Phones & Accessories › Cases, Holsters & Sleeves › Cases | phone case | accessory | color,phone_model | 6-35
screen protectors | Cell Phones & Accessories › Screen Protectors | screen protector | accessory | phone_model,count | 5-20
tablet cases | Computers & Accessories › Tablet Accessories › Cases | tablet case | accessory | color,tablet_model | 10-45
laptop sleeves | Computers & Accessories › Laptop Accessories › Bags, Cases & Sleeves | laptop sleeve | accessory | color,laptop_size | 10-40
wireless mice | Computers & Accessories › Keyboards, Mice & Accessories › Mice | mouse | computer | color | 8-80
keyboards | Computers & Accessories › Keyboards, Mice & Accessories › Keyboards | keyboard | computer | color,style | 15-150
computer monitors | Computers & Accessories › Monitors | computer monitor | computer | screen_size | 90-600
usb hubs | Computers & Accessories › USB Hubs | usb hub | power,computer | color | 10-50
external hard drives | Computers & Accessories › Data Storage › External Hard Drives | hard drive | computer | capacity,color | 45-220
flash drives | Computers & Accessories › Data Storage › USB Flash Drives | flash drive | computer | capacity,count | 6-40
memory cards | Computers & Accessories › Memory Cards › Micro SD Cards | memory card | computer | capacity | 8-60
security cameras | Camera & Photo › Video Surveillance › Surveillance Cameras | security camera | camera | count | 25-200
dash cams | Car & Vehicle Electronics › Car Video › Dash Cams | dash cam | camera | style | 30-180
webcams | Computers & Accessories › Webcams | webcam | camera,computer | style | 20-120
tv mounts | Television & Video › Accessories › TV Mounts | tv mount | tv | screen_size | 20-90
remote controls | Television & Video › Accessories › Remote Controls | remote control | tv | style | 8-30
hdmi cables | Television & Video › Accessories › Cables › HDMI Cables | hdmi cable | power,tv | length,count | 6-30
smart watches | Wearable Technology › Smartwatches | smartwatch | wearable | color,band_size | 30-300
fitness trackers | Wearable Technology › Activity & Fitness Trackers | fitness tracker | wearable | color | 20-120
watch bands | Wearable Technology › Accessories › Bands | watch band | accessory,wearable | color,band_size | 6-30
ring lights | Camera & Photo › Lighting & Studio › Ring Lights | ring light | camera | ring_size | 15-90
""",
    "fashion": """
women's dresses | Women › Clothing › Dresses | dress | apparel | color,apparel_size | 18-90
women's blouses | Women › Clothing › Tops, Tees & Blouses › Blouses | blouse | apparel | color,apparel_size | 12-45
women's leggings | Women › Clothing › Leggings | leggings | apparel | color,apparel_size | 10-40
women's jeans | Women › Clothing › Jeans | jeans | apparel | color,waist_size | 20-80
women's cardigans | Women › Clothing › Sweaters › Cardigans | cardigan | apparel | color,apparel_size | 18-60
women's swimsuits | Women › Clothing › Swimsuits & Cover Ups | swimsuit | apparel | color,apparel_size | 15-55
women's pajama sets | Women › Clothing › Lingerie, Sleep & Lounge › Sleep & Lounge › Sets | pajama set | apparel | color,apparel_size | 15-50
women's sneakers | Women › Shoes › Fashion Sneakers | sneakers | shoes | color,shoe_size | 25-110
women's sandals | Women › Shoes › Sandals | sandals | shoes | color,shoe_size | 15-70
women's loafers & slip-ons | Women › Shoes › Loafers & Slip-Ons | loafers | shoes | color,shoe_size | 20-90
women's boots | Women › Shoes › Boots | boots | shoes | color,shoe_size | 35-160
women's handbags | Women › Handbags & Wallets › Shoulder Bags | handbag | jewelry | color | 20-150
men's t-shirts | Men › Clothing › Shirts › T-Shirts | t-shirt | apparel | color,apparel_size | 8-35
men's dress shirts | Men › Clothing › Shirts › Dress Shirts | dress shirt | apparel | color,apparel_size | 18-60
men's jeans | Men › Clothing › Jeans | jeans | apparel | color,waist_size | 20-80
men's shorts | Men › Clothing › Shorts | shorts | apparel | color,apparel_size | 12-45
men's hoodies | Men › Clothing › Active › Active Hoodies | hoodie | apparel | color,apparel_size | 18-65
men's jackets | Men › Clothing › Jackets & Coats | jacket | apparel | color,apparel_size | 30-180
men's running shoes | Men › Shoes › Athletic › Running | running shoes | shoes | color,shoe_size | 35-150
men's oxfords | Men › Shoes › Oxfords | oxford shoes | shoes | color,shoe_size | 40-160
men's socks | Men › Clothing › Socks | socks | apparel | color,count | 8-30
men's wallets | Men › Accessories › Wallets, Card Cases & Money Organizers › Wallets | wallet | jewelry | color | 10-70
men's wrist watches | Men › Watches › Wrist Watches | watch | jewelry | color | 25-250
baseball caps | Men › Accessories › Hats & Caps › Baseball Caps | baseball cap | jewelry | color | 8-35
women's necklaces | Women › Jewelry › Necklaces | necklace | jewelry | color | 10-120
women's earrings | Women › Jewelry › Earrings | earrings | jewelry | color | 8-90
sunglasses | Men › Accessories › Sunglasses & Eyewear Accessories › Sunglasses | sunglasses | jewelry | color | 10-150
girls' dresses | Girls › Clothing › Dresses | dress | apparel | color,kids_size | 12-45
boys' sneakers | Boys › Shoes › Sneakers | sneakers | shoes | color,kids_shoe | 18-70
""",
    "grocery": """
protein bars | Snack Foods › Bars › Protein Bars | protein bar | food | flavor,count | 10-45
granola | Breakfast Foods › Cereals › Granola | granola | food | flavor,weight | 5-25
potato chips | Snack Foods › Chips & Crisps › Potato Chips | potato chips | food | flavor,weight | 3-30
beef jerky | Snack Foods › Jerky & Dried Meats › Jerky | beef jerky | food | flavor,weight | 7-40
mixed nuts | Snack Foods › Nuts & Seeds › Mixed Nuts | nut mix | food | flavor,weight | 8-40
dried fruit | Dried Fruits & Vegetables › Dried Fruits | fruit snacks | food | flavor,weight | 5-30
whole bean coffee | Beverages › Coffee, Tea & Cocoa › Coffee › Whole Coffee Beans | coffee beans | drink | coffee_flavor,weight | 9-45
ground coffee | Beverages › Coffee, Tea & Cocoa › Coffee › Ground Coffee | ground coffee | drink | coffee_flavor,weight | 7-35
coffee pods | Beverages › Coffee, Tea & Cocoa › Coffee › Single-Serve Capsules & Pods | coffee pods | drink | coffee_flavor,count | 10-50
green tea | Beverages › Coffee, Tea & Cocoa › Tea › Green | green tea | drink | flavor,count | 4-25
herbal tea | Beverages › Coffee, Tea & Cocoa › Tea › Herbal | herbal tea | drink | flavor,count | 4-25
sparkling water | Beverages › Bottled Beverages, Water & Drink Mixes › Sparkling Water | sparkling water | drink | flavor,count | 6-30
energy drinks | Beverages › Energy Drinks | energy drink | drink | flavor,count | 10-45
protein powder | Sports Nutrition › Protein › Whey | protein powder | food | flavor,weight | 20-70
olive oil | Pantry Staples › Cooking & Baking › Oils › Olive | olive oil | food | volume,count | 8-40
honey | Pantry Staples › Jams, Jellies & Sweet Spreads › Honey | honey | food | weight,count | 6-35
peanut butter | Pantry Staples › Nut & Seed Butters › Peanut Butter | peanut butter | food | flavor,weight | 4-20
pasta | Pantry Staples › Pasta & Noodles › Dry Pasta | pasta | food | weight,count | 3-25
rice | Pantry Staples › Dried Grains & Rice › Rice | rice | food | weight | 4-35
spices | Pantry Staples › Herbs, Spices & Seasonings › Mixed Spices & Seasonings | seasoning | food | flavor,weight | 4-20
hot sauce | Condiments & Salad Dressings › Sauces › Hot Sauce | hot sauce | food | flavor,count | 4-25
chocolate bars | Candy & Chocolate › Chocolate › Chocolate Bars | chocolate bar | food | flavor,count | 5-35
gummy candy | Candy & Chocolate › Candy › Gummy Candies | gummy bears | food | flavor,weight | 4-25
cookies | Snack Foods › Cookies | cookies | food | flavor,count | 4-25
crackers | Snack Foods › Crackers | crackers | food | flavor,count | 3-20
baby food | Baby Foods › Baby Food Pouches | baby food pouch | food | flavor,count | 8-35
breakfast cereal | Breakfast Foods › Cereals › Cold Cereals | cereal | food | flavor,weight | 4-22
""",
    "garden": """
sofas | Furniture › Living Room Furniture › Sofas & Couches | sofa | furniture | color | 180-900
coffee tables | Furniture › Living Room Furniture › Tables › Coffee Tables | coffee table | furniture | color | 50-350
bookcases | Furniture › Home Office Furniture › Bookcases | bookcase | furniture | color | 40-250
office chairs | Furniture › Home Office Furniture › Home Office Chairs › Desk Chairs | office chair | furniture | color | 60-400
desks | Furniture › Home Office Furniture › Home Office Desks | desk | furniture | color,desk_size | 60-400
bed frames | Furniture › Bedroom Furniture › Beds, Frames & Bases › Beds | bed frame | furniture | bed_size | 90-600
nightstands | Furniture › Bedroom Furniture › Nightstands | nightstand | furniture | color,count | 35-200
bar stools | Furniture › Kitchen & Dining Room Furniture › Bar Stools | bar stool | furniture | color,count | 45-300
area rugs | Home Décor Products › Area Rugs, Runners & Pads › Area Rugs | area rug | decor | color,rug_size | 25-300
curtains | Home Décor Products › Window Treatments › Curtains & Drapes › Panels | curtain panel | decor | color,curtain_size | 15-70
throw pillow covers | Bedding › Decorative Pillows, Inserts & Covers › Throw Pillow Covers | pillow cover | decor | color,pillow_size | 8-35
bed sheets | Bedding › Sheets & Pillowcases › Sheet & Pillowcase Sets | sheet set | decor | color,bed_size | 20-110
comforters | Bedding › Comforters & Sets › Comforter Sets | comforter | decor | color,bed_size | 30-180
wall art | Home Décor Products › Wall Art › Posters & Prints | wall art | decor | art_size | 15-120
table lamps | Lighting & Ceiling Fans › Lamps & Shades › Table Lamps | table lamp | decor | color,count | 20-150
cookware sets | Kitchen & Dining › Cookware › Pots & Pans › Cookware Sets | cookware set | kitchen | color | 50-400
water bottles | Kitchen & Dining › Storage & Organization › Travel & To-Go Food Containers › Water Bottles | water bottle | kitchen | color,volume | 10-45
food storage containers | Kitchen & Dining › Storage & Organization › Food Storage › Food Containers | storage container | kitchen | count | 12-60
knife sets | Kitchen & Dining › Kitchen Utensils & Gadgets › Knives & Accessories › Block Sets | knife set | kitchen | color | 30-250
coffee mugs | Kitchen & Dining › Dining & Entertaining › Glassware & Drinkware › Mugs | coffee mug | kitchen | color,count | 8-40
planters | Patio, Lawn & Garden › Gardening & Lawn Care › Pots, Planters & Container Accessories › Planters | planter | garden | color,pot_size | 12-80
garden hoses | Patio, Lawn & Garden › Watering Equipment › Garden Hoses | garden hose | garden | length_ft | 20-110
solar lights | Patio, Lawn & Garden › Outdoor Décor › Outdoor Lighting › Pathway Lights | solar light | garden | color,count | 15-70
patio chairs | Patio, Lawn & Garden › Patio Furniture & Accessories › Patio Seating › Chairs | patio chair | garden,furniture | color,count | 40-300
bird feeders | Patio, Lawn & Garden › Birding & Wildlife › Bird Feeders | bird feeder | garden | color | 12-60
""",
}

# fmt: on

_ROOTS = {
    "beauty": "Beauty & Personal Care",
    "electronics": "Electronics",
    "fashion": "Clothing, Shoes & Jewelry",
    "grocery": "Grocery & Gourmet Food",
    "garden": "Home & Kitchen",
}

def _parse_types(category: str, root: str, table: str) -> tuple[ProductType, ...]:
    types = []
    for line in table.strip().splitlines():
        query, tail, name, groups, options, price = (part.strip() for part in line.split("|"))
        # Garden types keep their own root ("Patio, Lawn & Garden"), the others hang off the category root.
        breadcrumb = tail if tail.startswith("Patio") else f"{root} › {tail}"
        lo, hi = (float(x) for x in price.split("-"))
        types.append(
            ProductType(
                category,
                query,
                breadcrumb,
                name,
                tuple(groups.split(",")),
                tuple(o for o in options.split(",") if o),
                (lo, hi),
            )
        )
    return tuple(types)


CATEGORIES: dict[str, Category] = {
    name: Category(name, _ROOTS[name], tuple(_BRANDS[name].split()), _parse_types(name, _ROOTS[name], table))
    for name, table in _TYPES.items()
}

_TAGGER: TitleNounTagger | None = None


def title_nouns(text: str) -> list[str]:
    """The lower-cased tokens of a generated title that spaCy's ``en_core_web_sm`` tags NOUN or PROPN,
    as ``TitleNounTagger`` predicts them offline (in order, duplicates kept).

    Example:
        >>> title_nouns("Camdyn Relaxed Fit Hoodie for Men")
        ['camdyn', 'relaxed', 'fit', 'hoodie', 'men']
    """
    global _TAGGER
    if _TAGGER is None:
        _TAGGER = TitleNounTagger()
    return _TAGGER(text)
