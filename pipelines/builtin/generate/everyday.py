"""The 40 everyday prompts the builtin painter is judged by, each with the word for its main
subject: animals, vehicles, food, people with a job, objects and places, as a new user types
them. `make gallery` draws them on a contact sheet (docs/gallery/everyday.jpg) and a test checks
from the notes that the main subject was drawn in at least 34 of them."""

from __future__ import annotations

EVERYDAY_PROMPTS: tuple[tuple[str, str], ...] = (
    ("a red bicycle leaning against a brick wall", "bicycle"),
    ("a cat sleeping on a sofa in a living room", "cat"),
    ("portrait of an old fisherman", "fisherman"),
    ("a golden retriever on the beach", "retriever"),
    ("a yellow school bus on a street", "bus"),
    ("a cup of coffee on a wooden table", "coffee"),
    ("a chef in a kitchen", "chef"),
    ("two horses in a field at sunset", "horses"),
    ("a red hot air balloon over the mountains", "hot air balloon"),
    ("a bowl of ramen", "ramen"),
    ("a firefighter next to a fire engine", "firefighter"),
    ("an owl in a forest at night", "owl"),
    ("a teapot and three cups on a kitchen table", "teapot"),
    ("a sailboat on a calm blue sea", "sailboat"),
    ("a dog under a tree in a park", "dog"),
    ("an astronaut floating in space", "astronaut"),
    ("a slice of pizza", "pizza"),
    ("a laptop on a desk in an office", "laptop"),
    ("a green tractor on a farm", "tractor"),
    ("a penguin in the snow", "penguin"),
    ("a birthday cake with candles", "cake"),
    ("a doctor in a white coat", "doctor"),
    ("a vase of flowers on a table", "flowers"),
    ("a rabbit in a garden", "rabbit"),
    ("a blue car parked on a street", "car"),
    ("a teacher in a classroom", "teacher"),
    ("an elephant in the desert", "elephant"),
    ("a stack of books on a desk", "books"),
    ("a snowman in a winter forest", "snowman"),
    ("a guitar against a wall", "guitar"),
    ("a robot in a futuristic city", "robot"),
    ("a farmer with a pumpkin", "farmer"),
    ("a fox in the snow at dawn", "fox"),
    ("a basket of apples", "apples"),
    ("a pink flamingo by a lake", "flamingo"),
    ("a man holding an umbrella in the rain", "man"),
    ("a tent under a starry night sky", "tent"),
    ("a cow in a meadow", "cow"),
    ("a lighthouse on a rocky coast", "lighthouse"),
    ("a croissant and an espresso in a cafe", "croissant"),
)
